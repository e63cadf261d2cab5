"""What ``Rota.jobs()`` lists: one status per schedule and per pending, paused or running job."""

from __future__ import annotations

from datetime import datetime

from rota.core.model import FINISHED_WINDOW, JobStatus
from rota.core.schedules import Schedule, ScheduleState, ScheduleStats
from rota.store.base import Store


def schedule_status(schedule: Schedule, stats: ScheduleStats) -> JobStatus:
    if schedule.state is ScheduleState.ACTIVE:
        status = "running" if stats.running else "pending"
        next_run = schedule.next_run_at
    else:
        status, next_run = schedule.state.value, None
    return JobStatus(
        id=schedule.name,
        name=schedule.name,
        cron=schedule.spec.cron,
        status=status,
        last_run=stats.last_run,
        next_run=next_run,
        runs=stats.runs,
        failures=stats.failures,
        tz=schedule.spec.tz,
        code_cron=schedule.code_cron,
        code_tz=schedule.code_tz,
        failing=schedule.failing,
    )


def statuses(store: Store, limit: int | None, now: datetime) -> list[JobStatus]:
    """A status per schedule (disabled ones aside), then per pending, paused or running job,
    newest first: every one of them, or the newest ``limit`` jobs.  A schedule's runs and
    failures are those of its ticks in the ``FINISHED_WINDOW`` before ``now``.  Jobs are read
    as their lines (``ReadStore.live``): a backlog of thousands is listed without reading their
    arguments."""
    shown = (ScheduleState.ACTIVE, ScheduleState.PAUSED, ScheduleState.CANCELLED)
    schedules = store.schedules.all(shown)
    stats = store.schedules.stats(now - FINISHED_WINDOW) if schedules else {}
    active = store.reads.live(limit) if limit != 0 else []
    return [schedule_status(s, stats.get(s.name, ScheduleStats())) for s in schedules] + active
