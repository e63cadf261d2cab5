"""``/api/jobs``: list and search jobs, show one, queue one by its task's name, and act on one
(cancel, retry, pause, resume), each through the ``Rota`` façade."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from rota.core.model import JobState
from rota.dashboard.api import encoding
from rota.dashboard.api.auth import Access
from rota.dashboard.api.replies import moment, name, only, reply, typed, whole
from rota.dashboard.api.routing import Call, Handler
from rota.dashboard.views import parse_job_id
from rota.errors import InvalidArguments, JobNotFound

MAX_LIMIT = 1000
MAX_OFFSET = 10_000
"""As the dashboard's pages: a deeper ``OFFSET`` makes the database walk every row it skips;
filters find older jobs."""
STATES = tuple(state.value for state in JobState if state is not JobState.UNKNOWN)
QUEUE_MEMBERS = frozenset(
    {"task", "args", "kwargs", "delay", "run_at", "priority", "queue", "unique_key", "depends_on"}
)
SIGNAL_MEMBERS = frozenset({"signal", "payload"})


def job_id(call: Call) -> int:
    """The job the path names; a path that cannot name one names a job that does not exist."""
    text = str(call.path["job_id"])
    found = parse_job_id(text)
    if found is None:
        raise JobNotFound(f"job {text[:40]} does not exist")
    return found


def search(call: Call) -> Response:
    """``GET /api/jobs``: newest first, filtered by ``state`` (repeatable), ``task``, ``queue``,
    ``namespace`` (the app's by default); ``limit`` (1 to 1000, default 100) from ``offset``
    (at most 10,000)."""
    states = []
    for value in call.query.getlist("state"):
        if value not in STATES:
            raise InvalidArguments(f"unknown state {value[:40]!r}: use one of {', '.join(STATES)}")
        states.append(JobState(value))
    limit = whole(call.query.get("limit"), "limit", 100, 1, MAX_LIMIT)
    offset = whole(call.query.get("offset"), "offset", 0, 0, MAX_OFFSET)
    task, queue = name(call.query.get("task"), "task"), name(call.query.get("queue"), "queue")
    found = call.viewed.summaries(tuple(states), task, queue, limit, offset)
    return reply(
        {"jobs": [encoding.summary(job) for job in found], "limit": limit, "offset": offset}
    )


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
    ("GET", "/jobs", Access.READ, search),
    ("POST", "/jobs", Access.OPERATE, enqueue),
    ("GET", "/jobs/{job_id}", Access.READ, show),
    ("POST", "/jobs/{job_id}/cancel", Access.OPERATE, cancel),
    ("POST", "/jobs/{job_id}/retry", Access.OPERATE, retry),
    ("POST", "/jobs/{job_id}/pause", Access.OPERATE, pause),
    ("POST", "/jobs/{job_id}/resume", Access.OPERATE, resume),
    ("POST", "/jobs/{job_id}/signal", Access.OPERATE, signal),
]
