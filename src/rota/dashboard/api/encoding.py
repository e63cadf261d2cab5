"""Rota's records as the HTTP API's JSON: the one place their wire format is written.

Times are ISO 8601 strings in UTC; states are their names.  ``openapi.py`` describes these
shapes, and the schema test checks every answer against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from rota.core.model import AttemptError, Counts, Job, Progress
from rota.core.schedules import Schedule, ScheduleChange
from rota.core.workflow import Step
from rota.store.values import JobSummary


def when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(timezone.utc).isoformat()


def error(entry: AttemptError | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {**entry.to_json(), "at": when(entry.at)}


def progress(value: Progress | None) -> dict[str, Any] | None:
    return None if value is None else {"fraction": value.fraction, "note": value.note}


def summary(job: JobSummary) -> dict[str, Any]:
    """A job in a listing: no arguments, no result, its last error only."""
    return {
        "id": job.id,
        "task": job.task,
        "queue": job.queue,
        "state": job.unknown_state or job.state.value,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "run_at": when(job.run_at),
        "started_at": when(job.started_at),
        "finished_at": when(job.finished_at),
        "schedule": job.schedule,
        "failures": job.failures,
        "last_error": error(job.last_error),
        "progress": progress(job.progress),
    }


def found(record: Job) -> dict[str, Any]:
    """A job in a search's page: a listing's summary, with its tags and metadata (the row is
    whole there, so nothing is fetched for them)."""
    return {
        **summary(JobSummary.of(record)),
        "created_at": when(record.created_at),
        "tags": list(record.tags),
        "meta": record.meta,
        "stuck": record.stuck,
    }


def job(record: Job, steps: Sequence[Step] | None = None) -> dict[str, Any]:
    """A job in full: arguments, result and every failed attempt's error; with ``steps``, its
    saved workflow steps too."""
    shown = {
        "id": record.id,
        "namespace": record.namespace,
        "task": record.task,
        "queue": record.queue,
        "state": record.unknown_state or record.state.value,
        "args": list(record.args),
        "kwargs": dict(record.kwargs),
        "attempt": record.attempt,
        "max_attempts": record.max_attempts,
        "priority": record.priority,
        "run_at": when(record.run_at),
        "created_at": when(record.created_at),
        "started_at": when(record.started_at),
        "finished_at": when(record.finished_at),
        "schedule": record.schedule,
        "scheduled_at": when(record.scheduled_at),
        "manual": record.manual,
        "unique_key": record.unique_key,
        "depends_on": list(record.depends_on),
        "cancel_requested": record.cancel_requested,
        "progress": progress(record.progress),
        "result": record.result,
        "errors": [error(entry) for entry in record.errors],
        "problem": record.payload_error,
        "waiting_for": record.waiting_for,
        "batch_id": record.batch_id,
        "tags": list(record.tags),
        "meta": record.meta,
        "replay_of": record.replay_of,
        "stuck": record.stuck,
    }
    if steps is not None:
        shown["steps"] = [
            {"name": each.name, "result": each.result, "finished_at": when(each.finished_at)}
            for each in steps
        ]
    return shown


def schedule(record: Schedule) -> dict[str, Any]:
    """A schedule: the rule in force, and the code's beside it while it is overridden."""
    return {
        "name": record.name,
        "task": record.spec.task,
        "cron": record.spec.cron,
        "tz": record.spec.tz,
        "queue": record.spec.queue,
        "priority": record.spec.priority,
        "source": record.spec.source.value,
        "state": record.state.value,
        "next_run_at": when(record.next_run_at),
        "last_run_at": when(record.last_run_at),
        "created_at": when(record.created_at),
        "updated_at": when(record.updated_at),
        "overridden": record.overridden,
        "code_cron": record.code_cron,
        "code_tz": record.code_tz,
        "version": record.version,
        "failures": record.failures,
        "failing": record.failing,
    }


def plain(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A history entry's old or new values, times as strings."""
    if values is None:
        return None
    return {
        key: when(value) if isinstance(value, datetime) else value for key, value in values.items()
    }


def change(entry: ScheduleChange) -> dict[str, Any]:
    return {
        "schedule": entry.schedule,
        "at": when(entry.at),
        "action": entry.action.value,
        "actor": entry.actor,
        "old": plain(entry.old),
        "new": plain(entry.new),
    }


def counts(record: Counts) -> dict[str, Any]:
    return {
        "by_state": dict(record.by_state),
        "by_queue": {name: dict(states) for name, states in record.by_queue.items()},
        "by_task": {name: dict(states) for name, states in record.by_task.items()},
        "finished_since": when(record.finished_since),
        "total": record.total,
    }
