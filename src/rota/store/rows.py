"""Rows to rota's value types and back: jobs, workers and schedules, as every store module reads
and writes them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Table

from rota.core import payload
from rota.core.model import DEFAULT_QUEUE, AttemptError, Job, JobState, NewJob, Progress, WorkerInfo
from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleChange,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
)
from rota.errors import InvalidArguments

RUNNING = JobState.RUNNING.value
WAITING = (JobState.PENDING.value, JobState.PAUSED.value)
"""States whose jobs have yet to run: pending, or paused by hand or with their queue."""
UNREADABLE_QUOTE = 500


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
        "unique_key": job.unique_key,
        "concurrency_key": job.concurrency_key,
        "rate_key": job.rate_key,
        "has_dependencies": bool(job.depends_on),
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
    try:
        args, kwargs, trace = payload.decode(data["payload"])
    except InvalidArguments as error:
        args, kwargs, trace = (), {}, None
        problems.append(str(error))
    errors = _attempt_errors(data["errors"], problems)
    priority = data["priority"]
    if not isinstance(priority, int) or isinstance(priority, bool):
        problems.append(f"its priority {priority!r} is not an integer")
        priority = 0
    return Job(
        id=data["id"],
        task=data["task"],
        queue=data["queue"],
        args=args,
        kwargs=kwargs,
        state=JobState(data["state"]),
        attempt=data["attempt"],
        max_attempts=data["max_attempts"],
        priority=priority,
        run_at=data["run_at"],
        created_at=data["created_at"],
        started_at=data["started_at"],
        finished_at=data["finished_at"],
        schedule=data["schedule"],
        scheduled_at=data["scheduled_at"],
        errors=errors,
        lease_owner=data["lease_owner"],
        lease_until=data["lease_until"],
        cancel_requested=bool(data["cancel_requested"]),
        unique_key=data["unique_key"],
        trace=trace,
        result=_result(data["result"], problems),
        progress=_progress(data["progress"], data["progress_note"]),
        snoozes=data["snoozes"],
        concurrency_key=data["concurrency_key"],
        rate_key=data["rate_key"],
        payload_error="; ".join(problems) or None,
    )


def _result(stored: str | None, problems: list[str]) -> Any:
    """The stored return value; ``None``, and a problem quoting the text, if unreadable."""
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError as error:
        problems.append(
            f"its result cannot be read ({error}); it held {stored[:UNREADABLE_QUOTE]!r}"
        )
        return None


def _progress(fraction: float | None, note: str | None) -> Progress | None:
    return None if fraction is None else Progress(fraction, note)


def _attempt_errors(stored: str | None, problems: list[str]) -> tuple[AttemptError, ...]:
    """The recorded attempt errors; none, and a problem quoting the text, if unreadable (the
    quote ends up in the error the failed attempt records, so the text is not lost)."""
    try:
        return tuple(AttemptError.from_json(item) for item in json.loads(stored or "[]"))
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        problems.append(
            f"its errors column cannot be read ({type(error).__name__}: {error}); "
            f"it held {(stored or '')[:UNREADABLE_QUOTE]!r}"
        )
        return ()


def errors_json(errors: Sequence[AttemptError]) -> str:
    return json.dumps([error.to_json() for error in errors], ensure_ascii=False)


def worker_values(worker: WorkerInfo) -> dict[str, Any]:
    """Queues and each task's queue are JSON, so a worker registers in one row."""
    return {
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "queues": json.dumps(list(worker.queues)),
        "tasks": json.dumps(
            {task: worker.task_queues.get(task, DEFAULT_QUEUE) for task in worker.tasks}
        ),
        "concurrency": worker.concurrency,
        "started_at": worker.started_at,
        "heartbeat_at": worker.heartbeat_at,
        "heartbeat_seconds": worker.heartbeat_seconds,
    }


def to_worker(data: Mapping[Any, Any]) -> WorkerInfo:
    task_queues: dict[str, str] = json.loads(data["tasks"])
    return WorkerInfo(
        id=data["id"],
        host=data["host"],
        pid=data["pid"],
        queues=tuple(json.loads(data["queues"])),
        tasks=tuple(task_queues),
        task_queues=task_queues,
        concurrency=data["concurrency"],
        started_at=data["started_at"],
        heartbeat_at=data["heartbeat_at"],
        heartbeat_seconds=data["heartbeat_seconds"],
    )


def to_schedule(data: Mapping[Any, Any]) -> Schedule:
    spec = ScheduleSpec(
        name=data["name"],
        task=data["task"],
        cron=data["cron"],
        tz=data["tz"],
        payload=data["payload"],
        queue=data["queue"],
        priority=data["priority"],
        source=ScheduleSource(data["source"]),
    )
    return Schedule(
        spec=spec,
        state=ScheduleState(data["state"]),
        next_run_at=data["next_run_at"],
        last_run_at=data["last_run_at"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        code_cron=data["code_cron"],
        code_tz=data["code_tz"],
        version=data["version"],
        failures=data["failures"],
        failing=bool(data["failing"]),
    )


def to_change(data: Mapping[Any, Any]) -> ScheduleChange:
    return ScheduleChange(
        schedule=data["schedule"],
        at=data["at"],
        action=ScheduleAction(data["action"]),
        actor=data["actor"],
        old=json.loads(data["old"]) if data["old"] else None,
        new=json.loads(data["new"]) if data["new"] else None,
    )


def change_values(change: ScheduleChange) -> dict[str, Any]:
    def encoded(value: Mapping[str, Any] | None) -> str | None:
        return None if value is None else json.dumps(dict(value), sort_keys=True)

    return {
        "schedule": change.schedule,
        "at": change.at,
        "action": change.action.value,
        "actor": change.actor,
        "old": encoded(change.old),
        "new": encoded(change.new),
    }


def aware(value: datetime | None) -> datetime | None:
    """Aggregates lose the column type on some drivers; read them back as aware UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)
