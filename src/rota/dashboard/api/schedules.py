"""``/api/schedules``: list and show schedules, run one now, pause, resume, edit its cron or
time zone, reset a code schedule's override, and read its history, through the façade.

A schedule's name may hold ``/``, so it is the rest of the path: ``{name:path}``, with the
actions' routes declared before the plain one so that ``.../history`` is not read as a name.
"""

from __future__ import annotations

from starlette.responses import Response

from rota.core.schedules import ScheduleState
from rota.dashboard.api import encoding
from rota.dashboard.api.auth import Access
from rota.dashboard.api.replies import name, only, reply, typed, whole
from rota.dashboard.api.routing import Call, Handler
from rota.errors import InvalidArguments, ScheduleNotFound

MAX_HISTORY = 1000
EDIT_MEMBERS = frozenset({"cron", "tz", "version"})
STATES = tuple(state.value for state in ScheduleState)


def schedule_name(call: Call) -> str:
    """The schedule the path names; a path that cannot name one names none that exists."""
    text = str(call.path["name"])
    try:
        found = name(text, "schedule")
    except InvalidArguments:
        found = None
    if found is None:
        raise ScheduleNotFound(f"schedule {text[:40]!r} does not exist")
    return found


def listing(call: Call) -> Response:
    """``GET /api/schedules``: every schedule by name, or those of ``state`` (repeatable), of
    ``namespace`` (the app's by default)."""
    states = []
    for value in call.query.getlist("state"):
        if value not in STATES:
            raise InvalidArguments(f"unknown state {value[:40]!r}: use one of {', '.join(STATES)}")
        states.append(ScheduleState(value))
    found = call.viewed.schedules(tuple(states))
    return reply({"schedules": [encoding.schedule(item) for item in found]})


def show(call: Call) -> Response:
    return reply(encoding.schedule(call.rota.get_schedule(schedule_name(call))))


def acted(call: Call, schedule: str, changed: bool) -> Response:
    record = encoding.schedule(call.rota.get_schedule(schedule))
    return reply({"changed": changed, "schedule": record})


def run_now(call: Call) -> Response:
    """One job of the schedule at once (a manual run); its ticks carry on as before."""
    return reply({"id": call.rota.run_now(schedule_name(call))}, 201)


def pause(call: Call) -> Response:
    schedule = schedule_name(call)
    return acted(call, schedule, call.rota.pause(schedule))


def resume(call: Call) -> Response:
    schedule = schedule_name(call)
    return acted(call, schedule, call.rota.resume(schedule))


def version_of(call: Call) -> int | None:
    version = typed(call.body, "version", int, "an integer")
    if version is not None and version < 0:
        raise InvalidArguments(f"version must be 0 or more, got {version}")
    return version  # type: ignore[no-any-return]


def edit(call: Call) -> Response:
    """``PATCH``: a new cron and/or time zone, from the first tick at or after now; with
    ``version``, only if the schedule is still at it (else ``SCHEDULE_CONFLICT``)."""
    schedule = schedule_name(call)
    only(call.body, EDIT_MEMBERS)
    cron = typed(call.body, "cron", str, "a string")
    tz = typed(call.body, "tz", str, "a string")
    if cron is None and tz is None:
        raise InvalidArguments("give cron, tz or both")
    updated = call.rota.update_schedule(schedule, cron, tz, version=version_of(call))
    return reply(encoding.schedule(updated))


def reset(call: Call) -> Response:
    """End a code schedule's override (``changed`` is false when it had none)."""
    schedule = schedule_name(call)
    only(call.body, frozenset({"version"}))
    return acted(call, schedule, call.rota.reset_schedule(schedule, version=version_of(call)))


def history(call: Call) -> Response:
    """Its changes, newest first, at most ``limit`` (default 100)."""
    schedule = schedule_name(call)
    limit = whole(call.query.get("limit"), "limit", 100, 1, MAX_HISTORY)
    changes = call.rota.schedule_history(schedule, limit)
    return reply({"changes": [encoding.change(entry) for entry in changes]})


ROUTES: list[tuple[str, str, Access, Handler]] = [
    ("GET", "/schedules", Access.READ, listing),
    ("POST", "/schedules/{name:path}/run-now", Access.OPERATE, run_now),
    ("POST", "/schedules/{name:path}/pause", Access.OPERATE, pause),
    ("POST", "/schedules/{name:path}/resume", Access.OPERATE, resume),
    ("POST", "/schedules/{name:path}/reset", Access.OPERATE, reset),
    ("GET", "/schedules/{name:path}/history", Access.READ, history),
    ("GET", "/schedules/{name:path}", Access.READ, show),
    ("PATCH", "/schedules/{name:path}", Access.OPERATE, edit),
]
