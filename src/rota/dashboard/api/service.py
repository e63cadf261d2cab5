"""``/api/queues``, ``/api/counts`` and ``/api/health``: the cluster as a whole."""

from __future__ import annotations

from starlette.responses import Response

from rota.dashboard.api import encoding
from rota.dashboard.api.auth import Access
from rota.dashboard.api.replies import moment, name, problem, reply
from rota.dashboard.api.routing import Call, Handler
from rota.errors import ErrorCode, InvalidArguments


def queue_name(call: Call) -> str:
    found = name(str(call.path["name"]), "queue")
    if found is None:  # pragma: no cover - a route's path parameter is never empty
        raise InvalidArguments("queue must be 1 to 64 characters")
    return found


def queues(call: Call) -> Response:
    """``GET /api/queues``: every queue that has jobs or is paused, its counts by state."""
    counts = call.rota.counts()
    paused = set(call.rota.paused_queues())
    names = sorted(set(counts.by_queue) | paused)
    return reply(
        {
            "queues": [
                {"name": queue, "paused": queue in paused, "counts": counts.by_queue.get(queue, {})}
                for queue in names
            ]
        }
    )


def pause_queue(call: Call) -> Response:
    """No worker of the cluster claims from the queue until it is resumed."""
    queue = queue_name(call)
    return reply({"changed": call.rota.pause_queue(queue), "queue": queue, "paused": True})


def resume_queue(call: Call) -> Response:
    queue = queue_name(call)
    return reply({"changed": call.rota.resume_queue(queue), "queue": queue, "paused": False})


def counts(call: Call) -> Response:
    """``GET /api/counts``: exact counts by state, queue and task of ``namespace`` (the app's
    by default); with ``finished_since`` (an ISO 8601 date-time), finished jobs only from
    then."""
    since = call.query.get("finished_since")
    moment_since = moment(since, "finished_since") if since else None
    return reply(encoding.counts(call.viewed.counts(moment_since)))


def health(call: Call) -> Response:
    """``GET /api/health``: 200 when the database answers and rota's tables serve this release,
    and the live workers' count; 503 with the reason otherwise."""
    inspect = call.rota.inspect
    server = inspect.server()
    schema = inspect.schema()
    workers = len(inspect.workers())
    body = {
        "status": "ok",
        "namespace": call.rota.namespace,
        "database": {"product": server.product, "version": server.version},
        "schema": schema.state,
        "workers": workers,
    }
    why = server.problem or schema.problem
    if why is not None:
        failing = problem(ErrorCode.STORE_ERROR, why)
        return failing
    return reply(body)


ROUTES: list[tuple[str, str, Access, Handler]] = [
    ("GET", "/health", Access.READ, health),
    ("GET", "/counts", Access.READ, counts),
    ("GET", "/queues", Access.READ, queues),
    ("POST", "/queues/{name:path}/pause", Access.OPERATE, pause_queue),
    ("POST", "/queues/{name:path}/resume", Access.OPERATE, resume_queue),
]
