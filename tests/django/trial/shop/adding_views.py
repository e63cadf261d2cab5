"""A view under ``ATOMIC_REQUESTS``: it reads back the task result it has just enqueued."""

from django.http import HttpRequest, JsonResponse

from .adding import add


def add_now(request: HttpRequest) -> JsonResponse:
    result = add.enqueue(1, 2)
    again = add.get_result(result.id)
    return JsonResponse({"id": again.id, "status": str(again.status)})
