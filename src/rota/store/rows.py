"""Rows to rota's value types and back: jobs, workers and schedules, as every store module reads
and writes them.

A row is read tolerantly: what rota cannot read in it (a state or source a newer rota wrote, JSON
or a number edited by hand) never raises.  A job is read whole, with what is wrong in it
(``Job.payload_error``, ``Job.unknown_state``); a worker or schedule row becomes an
``UnreadableRow``, which whatever needs the row skips and ``ReportedRows`` logs once.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from enum import Enum
from itertools import pairwise
from typing import Any, TypeVar

from sqlalchemy import Table, and_, case, null, or_
from sqlalchemy.sql.elements import ColumnElement

from rota.core import payload
from rota.core.escaping import visible
from rota.core.events import EventName
from rota.core.model import (
    FINAL_STATES,
    STORED_STATES,
    AttemptError,
    Job,
    JobState,
    NewJob,
    Progress,
)
from rota.core.overlap import Overlap
from rota.core.schedules import (
    Schedule,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
)
from rota.errors import InvalidArguments
from rota.store.events import EventSink
from rota.store.values import UnreadableRow

RUNNING = JobState.RUNNING.value
UNSTARTED = (JobState.PENDING.value, JobState.PAUSED.value)
"""States whose jobs have yet to run: pending, or paused by hand or with their queue."""
FINAL = tuple(sorted(state.value for state in FINAL_STATES))
"""The final states, as stored."""
UNREADABLE_QUOTE = 500
REPORTED_ROWS = 1000
"""How many unreadable rows a store remembers having logged."""
E = TypeVar("E", bound=Enum)
logger = logging.getLogger("rota.store")
"""A worker row's JSON columns, what each holds and how that is said."""


def lease_expired(jobs: Table, now: datetime) -> ColumnElement[bool]:
    """A running job whose lease ended before ``now``, or that has none (a hand edit, a row
    another tool wrote): nothing renews it, so the rescue takes it as it takes a lapsed one."""
    lease = jobs.c.lease_until
    return and_(jobs.c.state == RUNNING, or_(lease < now, lease.is_(None)))


def released_key(jobs: Table) -> ColumnElement[Any]:
    """What an ending job's ``unique_key`` becomes: free (NULL), unless the job was queued with
    ``unique_for``, whose key stays taken after it finished (``store.unique``)."""
    return case((jobs.c.unique_for.is_(None), null()), else_=jobs.c.unique_key)


def finished_values(jobs: Table) -> dict[str, Any]:
    """What a final job's row drops; it keeps its last attempt's worker (``Job.lease_owner``)."""
    return {"lease_until": None, "cancel_requested": False, "unique_key": released_key(jobs)}


def outside(column: ColumnElement[str], values: Collection[str]) -> ColumnElement[bool]:
    """``column`` holds none of ``values``: the ranges around them, each one an index serves
    (``NOT IN`` is a scan on PostgreSQL).  For lowercase ASCII words, as rota's states are,
    every collation orders as Python does."""
    ordered = sorted(values)
    ranges = [column < ordered[0], column > ordered[-1]]
    ranges += [and_(column > low, column < high) for low, high in pairwise(ordered)]
    return or_(*ranges)


def in_states(column: ColumnElement[str], states: Collection[JobState]) -> ColumnElement[bool]:
    """``column`` holds one of ``states``; ``UNKNOWN`` stands for any state rota does not know."""
    known = [state.value for state in states if state is not JobState.UNKNOWN]
    if JobState.UNKNOWN not in states:
        return column.in_(known)
    unknown = outside(column, [state.value for state in STORED_STATES])
    return or_(column.in_(known), unknown) if known else unknown


def job_values(job: NewJob, now: datetime) -> dict[str, Any]:
    """The row of a job about to be written: pending, no attempt yet."""
    return {
        "task": job.task,
        "queue": job.queue,
        "priority": job.priority,
        "state": JobState.PENDING.value,
        "payload": job.payload,
        "attempt": 0,
        "max_attempts": job.max_attempts,
        "run_at": job.run_at,
        "created_at": now,
        "cancel_requested": False,
        "schedule": job.schedule,
        "scheduled_at": job.scheduled_at,
        "tick": None if job.schedule is None or job.manual else True,
        "unique_key": job.unique_key,
        "concurrency_key": job.concurrency_key,
        "rate_key": job.rate_key,
        "has_dependencies": bool(job.depends_on or job.after),
        "batch_id": job.batch_id,
        "meta": job.meta,
        "unique_for": job.unique_for,
        "replay_of": job.replay_of,
        "error_code": None,
    }


def set_only(table: Table, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` without the columns NULL in all of them and without a default: the database
    writes NULL there anyway, and the driver need not adapt them row by row (PyMySQL escapes
    each parameter in Python; most jobs leave 5 of 16 columns unset)."""
    unset = {
        key
        for key, value in rows[0].items()
        if value is None
        and table.c[key].server_default is None
        and all(row[key] is None for row in rows)
    }
    if not unset:
        return rows
    return [{key: value for key, value in row.items() if key not in unset} for row in rows]


def to_job(data: Mapping[Any, Any]) -> Job:
    """A job row.  Parts that cannot be read (arguments written by a newer rota; an ``errors``
    column or a ``priority`` edited by hand, which SQLite stores as given) leave the job listed
    with ``payload_error`` saying why, so that a claim fails that job instead of raising on
    every poll: one bad row must not stop a worker from claiming the others."""
    problems: list[str] = []
    (args, kwargs, trace), errors, priority, result = _job_values(data, problems)
    state = JobState.stored(data["state"])
    return Job(
        id=data["id"],
        task=data["task"],
        queue=data["queue"],
        args=args,
        kwargs=kwargs,
        state=state,
        attempt=data["attempt"],
        max_attempts=data["max_attempts"],
        priority=priority,
        run_at=data["run_at"],
        created_at=data["created_at"],
        started_at=data["started_at"],
        finished_at=data["finished_at"],
        schedule=data["schedule"],
        scheduled_at=data["scheduled_at"],
        manual=data["schedule"] is not None and data["tick"] is None,
        errors=errors,
        lease_owner=data["lease_owner"],
        lease_until=data["lease_until"],
        cancel_requested=bool(data["cancel_requested"]),
        unique_key=data["unique_key"],
        trace=trace,
        result=result,
        progress=_progress(data["progress"], data["progress_note"]),
        snoozes=data["snoozes"],
        concurrency_key=data["concurrency_key"],
        rate_key=data["rate_key"],
        payload_error="; ".join(problems) or None,
        unknown_state=data["state"] if state is JobState.UNKNOWN else None,
        namespace=data["namespace"],
        waiting_for=data.get("waiting_for"),
        batch_id=data.get("batch_id"),
        meta=_meta(data.get("meta")),
        replay_of=data.get("replay_of"),
        stuck=state is JobState.RUNNING and data.get("stuck_attempt") == data["attempt"],
    )


JOB_CHECKED = ("id", "state", "payload", "errors", "priority", "result")
"""The columns of a job row that rota may be unable to read (``job_problems``)."""


def job_problems(data: Mapping[Any, Any]) -> str | None:
    """What cannot be read in a job row (``JOB_CHECKED`` columns suffice), in one sentence;
    ``None`` when all of it can.  As ``to_job`` reads it, without building the job."""
    problems: list[str] = []
    if JobState.stored(data["state"]) is JobState.UNKNOWN:
        problems.append(f"its state {data['state']!r} is not one this rota knows")
    _job_values(data, problems)
    return "; ".join(problems) or None


def _job_values(
    data: Mapping[Any, Any], problems: list[str]
) -> tuple[payload.Arguments, tuple[AttemptError, ...], int, Any]:
    """A row's arguments, errors, priority and result; unreadable ones: a stand-in and a problem."""
    try:
        decoded = payload.decode(data["payload"])
    except InvalidArguments as error:
        decoded = payload.Arguments((), {})
        problems.append(str(error))
    errors = _attempt_errors(data["errors"], problems)
    priority = data["priority"]
    if not _integer(priority):
        problems.append(f"its priority {priority!r} is not an integer")
        priority = 0
    return decoded, errors, priority, _result(data["result"], problems)


def _integer(value: object) -> bool:
    """SQLite keeps what an edit wrote in an integer column, text included."""
    return isinstance(value, int) and not isinstance(value, bool)


def _result(stored: str | None, problems: list[str]) -> Any:
    """The stored return value; ``None``, and a problem quoting the text, if unreadable."""
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError as error:
        problems.append(column_problem("result", error, stored))
        return None


def _meta(stored: str | None) -> dict[str, Any] | None:
    """The job's metadata; ``None`` if a hand edit left it unreadable (it never stops the job
    from running, as unreadable arguments do)."""
    if stored is None:
        return None
    try:
        meta = json.loads(stored)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def _progress(fraction: float | None, note: str | None) -> Progress | None:
    return None if fraction is None else Progress(fraction, note)


def _attempt_errors(stored: str | None, problems: list[str]) -> tuple[AttemptError, ...]:
    """The recorded attempt errors; none, and a problem quoting the text, if unreadable (the
    quote ends up in the error the failed attempt records, so the text is not lost)."""
    if not stored:  # a job that never failed: most of any listing
        return ()
    try:
        return tuple(AttemptError.from_json(item) for item in json.loads(stored))
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        problems.append(column_problem("errors", error, stored))
        return ()


def column_problem(column: str, error: Exception, stored: str | None) -> str:
    """That ``column`` cannot be read, and why, quoting the stored text."""
    return (
        f"its {column} column cannot be read ({type(error).__name__}: {error}); "
        f"it held {(stored or '')[:UNREADABLE_QUOTE]!r}"
    )


def errors_json(errors: Sequence[AttemptError]) -> str:
    return json.dumps([error.to_json() for error in errors], ensure_ascii=False)


def to_schedule(data: Mapping[Any, Any]) -> Schedule | UnreadableRow:
    """A schedule row; an ``UnreadableRow`` when its source or state is none rota knows, or a
    number is not a number (SQLite keeps what an edit wrote)."""
    problems: list[str] = []
    source = _member(ScheduleSource, data["source"], "source", problems)
    state = _member(ScheduleState, data["state"], "state", problems)
    for column in ("priority", "version", "failures"):
        if not _integer(data[column]):
            problems.append(f"its {column} {data[column]!r} is not an integer")
    overlap = _member(Overlap, data["overlap"], "overlap", problems)
    code_overlap = None
    if data["code_overlap"] is not None:
        code_overlap = _member(Overlap, data["code_overlap"], "code_overlap", problems)
    if source is None or state is None or overlap is None or problems:
        return UnreadableRow("schedule", data["name"], "; ".join(problems))
    spec = ScheduleSpec(
        name=data["name"],
        task=data["task"],
        cron=data["cron"],
        tz=data["tz"],
        payload=data["payload"],
        queue=data["queue"],
        priority=data["priority"],
        source=source,
        overlap=overlap,
    )
    return Schedule(
        spec=spec,
        state=state,
        next_run_at=data["next_run_at"],
        last_run_at=data["last_run_at"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        code_cron=data["code_cron"],
        code_tz=data["code_tz"],
        code_overlap=code_overlap,
        version=data["version"],
        failures=data["failures"],
        failing=bool(data["failing"]),
    )


def _member(kind: type[E], stored: object, column: str, problems: list[str]) -> E | None:
    try:
        return kind(stored)
    except ValueError:
        problems.append(f"its {column} {stored!r} is not one this rota knows")
        return None


def aware(value: datetime | None) -> datetime | None:
    """Aggregates lose the column type on some drivers; read them back as aware UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)


class ReportedRows:
    """The unreadable rows one store (its ``Database``) has logged, so that each is logged once,
    not at every poll that meets it again: the ``REPORTED_ROWS`` met most lately (a row
    forgotten, after that many others, is logged again when met)."""

    def __init__(self, events: EventSink, limit: int = REPORTED_ROWS) -> None:
        self.events = events
        self.limit = limit
        self._seen: OrderedDict[UnreadableRow, None] = OrderedDict()
        self._lock = threading.Lock()

    def report(self, row: UnreadableRow) -> None:
        """Log ``row`` unless it was logged lately (the same kind, key and problem)."""
        with self._lock:
            seen = row in self._seen
            self._seen[row] = None
            self._seen.move_to_end(row)
            if len(self._seen) > self.limit:
                self._seen.popitem(last=False)
        if seen:
            return
        self.events(
            logger,
            EventName.ROW_UNREADABLE,
            logging.WARNING,
            "the row of %s %s cannot be read, and is left alone (rota check lists it): %s",
            row.kind,
            visible(row.key),
            visible(row.problem),
            kind=row.kind,
            key=row.key,
        )
