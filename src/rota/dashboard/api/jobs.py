"""``/api/jobs``: show a job, queue one by its task's name, act on one (cancel, retry, pause,
resume, signal), change, replay or delete it, each through the ``Rota`` façade; listing,
searching and acting on many are in ``search``."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from rota.dashboard.api import encoding, search
from rota.dashboard.api.auth import Access
from rota.dashboard.api.replies import moment, only, reply, typed
from rota.dashboard.api.routing import Call, Handler
from rota.dashboard.views import parse_job_id
from rota.errors import InvalidArguments, JobNotFound

QUEUE_MEMBERS = frozenset(
    {
        *("task", "args", "kwargs", "delay", "run_at", "priority", "queue", "unique_key"),
        *("depends_on", "tags", "meta", "debounce", "unique_for"),
    }
)
EDIT_MEMBERS = frozenset({"run_at", "priority", "queue", "tags", "meta"})
SIGNAL_MEMBERS = frozenset({"signal", "payload"})


def job_id(call: Call) -> int:
    """The job the path names; a path that cannot name one names a job that does not exist."""
    text = str(call.path["job_id"])
    found = parse_job_id(text)
    if found is None:
        raise JobNotFound(f"job {text[:40]} does not exist")
    return found


def show(call: Call) -> Response:
    """``GET /api/jobs/{job_id}``: the whole job, arguments, result, errors and steps."""
    job = call.rota.job(job_id(call))
    return reply(encoding.job(job, call.rota.steps(job.id)))


def signal(call: Call) -> Response:
    """``POST /api/jobs/{job_id}/signal``: ``rota.signal(job_id, signal, payload)``; ``sent``
    is false when the job is not live (finished, or never was)."""
    body = call.body
    only(body, SIGNAL_MEMBERS)
    name = typed(body, "signal", str, "a string")
    if name is None:
        raise InvalidArguments("the body needs signal, the name of the signal to send")
    return reply({"sent": call.rota.signal(job_id(call), name, body.get("payload"))})


def enqueue(call: Call) -> Response:
    """``POST /api/jobs``: one job of the task named ``task``, as ``rota.queue(name, ...)``
    queues it (a task this process does not define is queued for the workers that do)."""
    body = call.body
    only(body, QUEUE_MEMBERS)
    task = typed(body, "task", str, "a string")
    if task is None:
        raise InvalidArguments("the body needs task, the name of the task to queue")
    options: dict[str, Any] = {
        "args": typed(body, "args", list, "an array") or [],
        "kwargs": typed(body, "kwargs", dict, "an object") or {},
    }
    delay = typed(body, "delay", (int, float), "a number of seconds")
    run_at = typed(body, "run_at", str, "an ISO 8601 date-time")
    priority = typed(body, "priority", int, "an integer")
    for key, value in (("queue", "a string"), ("unique_key", "a string")):
        if typed(body, key, str, value) is not None:
            options[key] = body[key]
    depends_on = typed(body, "depends_on", list, "an array of job ids")
    options.update(labels(body))
    for key in ("debounce", "unique_for"):
        seconds = typed(body, key, (int, float), "a number of seconds")
        if seconds is not None:
            options[key] = seconds
    if delay is not None:
        options["delay"] = delay
    if run_at is not None:
        options["run_at"] = moment(run_at, "run_at")
    if priority is not None:
        options["priority"] = priority
    if depends_on is not None:
        if not all(isinstance(item, int) and not isinstance(item, bool) for item in depends_on):
            raise InvalidArguments("depends_on must be an array of job ids (integers)")
        options["depends_on"] = depends_on
    new = call.rota.queue(task, **options)
    return reply({"id": new}, 201)


def labels(body: dict[str, Any]) -> dict[str, Any]:
    """``tags`` and ``meta`` as a body gives them, checked by type (the façade checks the
    rest: names' rules, the size of ``meta``)."""
    found: dict[str, Any] = {}
    tags = typed(body, "tags", list, "an array of strings")
    if tags is not None:
        if not all(isinstance(tag, str) for tag in tags):
            raise InvalidArguments("tags must be an array of strings")
        found["tags"] = tags
    meta = typed(body, "meta", dict, "an object")
    if meta is not None:
        found["meta"] = meta
    return found


def update(call: Call) -> Response:
    """``PATCH /api/jobs/{job_id}``: ``rota.update_job``; ``updated`` is false once a worker
    claimed the job or it ended (the compare-and-set lost), as an action's ``changed`` is."""
    job = job_id(call)
    body = call.body
    only(body, EDIT_MEMBERS)
    changes = labels(body)
    run_at = typed(body, "run_at", str, "an ISO 8601 date-time")
    if run_at is not None:
        changes["run_at"] = moment(run_at, "run_at")
    priority = typed(body, "priority", int, "an integer")
    if priority is not None:
        changes["priority"] = priority
    queue = typed(body, "queue", str, "a string")
    if queue is not None:
        changes["queue"] = queue
    if not changes:
        raise InvalidArguments(f"the body changes nothing: give {', '.join(sorted(EDIT_MEMBERS))}")
    updated = call.rota.update_job(job, **changes)
    return reply({"updated": updated, "job": encoding.job(call.rota.job(job))})


def replay(call: Call) -> Response:
    """``POST /api/jobs/{job_id}/replay``: a copy of a finished job, queued now."""
    return reply({"id": call.rota.replay(job_id(call))}, 201)


def delete(call: Call) -> Response:
    """``DELETE /api/jobs/{job_id}``: ``deleted`` is false for a running or waiting job; a
    job that does not exist is a 404, as for every route that names one."""
    job = job_id(call)
    deleted = call.rota.delete(job)
    if not deleted:
        call.rota.job(job)  # JOB_NOT_FOUND if there is none
    return reply({"deleted": deleted})


def acted(call: Call, changed: bool, job: int) -> Response:
    """An action's answer: whether it changed the job, and the job as it is now."""
    return reply({"changed": changed, "job": encoding.job(call.rota.job(job))})


def cancel(call: Call) -> Response:
    """Cancel a pending, paused or running job (a running one stops at its next heartbeat)."""
    job = job_id(call)
    return acted(call, call.rota.cancel(job), job)


def retry(call: Call) -> Response:
    """A failed or cancelled job back to pending with a fresh attempt budget."""
    job = job_id(call)
    return acted(call, call.rota.retry(job), job)


def pause(call: Call) -> Response:
    job = job_id(call)
    return acted(call, call.rota.pause(job), job)


def resume(call: Call) -> Response:
    job = job_id(call)
    return acted(call, call.rota.resume(job), job)


ROUTES: list[tuple[str, str, Access, Handler]] = [
    ("GET", "/jobs", Access.READ, search.search),
    ("POST", "/jobs", Access.OPERATE, enqueue),
    # Before the routes of one job: "count" and "actions" are not job ids.
    ("GET", "/jobs/count", Access.READ, search.count),
    ("POST", "/jobs/actions/{action}", Access.OPERATE, search.act),
    ("GET", "/jobs/{job_id}", Access.READ, show),
    ("PATCH", "/jobs/{job_id}", Access.OPERATE, update),
    ("DELETE", "/jobs/{job_id}", Access.OPERATE, delete),
    ("POST", "/jobs/{job_id}/replay", Access.OPERATE, replay),
    ("POST", "/jobs/{job_id}/cancel", Access.OPERATE, cancel),
    ("POST", "/jobs/{job_id}/retry", Access.OPERATE, retry),
    ("POST", "/jobs/{job_id}/pause", Access.OPERATE, pause),
    ("POST", "/jobs/{job_id}/resume", Access.OPERATE, resume),
    ("POST", "/jobs/{job_id}/signal", Access.OPERATE, signal),
]
