"""The trial's tasks (``backend_api.task`` is ``django.tasks.task``, or the backport's)."""

from rota.contrib.django.backend_api import task

from .models import Order


@task()
def add(a: int, b: int) -> int:
    return a + b


@task()
def pay(order_id: int) -> None:
    Order.objects.filter(id=order_id).update(paid=True)
