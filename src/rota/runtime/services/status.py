"""What ``Rota.jobs()`` lists: one status per schedule and per pending, paused or running job."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from rota.core.model import FINISHED_WINDOW, JobState, JobStatus
from rota.core.schedules import Schedule, ScheduleState, ScheduleStats
from rota.store.base import Store
from rota.store.values import JobSummary

STATUS = {state: state.value for state in JobState}
"""Each state's text, looked up: an enum member's ``value`` is a descriptor call, a cost seen
when ``rota.jobs()`` lists a backlog of thousands."""


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


def job_status(job: JobSummary, paused_queues: Collection[str] = ()) -> JobStatus:
    """A pending job in a paused queue shows as ``paused``: no worker will claim it."""
    waits = job.state is JobState.PENDING and job.queue in paused_queues
    return JobStatus(
        id=job.id,
        name=job.task,
        cron=None,
        status=STATUS[JobState.PAUSED if waits else job.state],
        last_run=job.started_at,
        next_run=job.run_at if job.state is JobState.PENDING else None,
        runs=job.attempt,
        failures=job.failures,
        progress=job.progress if job.state is JobState.RUNNING else None,
    )


def statuses(store: Store, limit: int | None, now: datetime) -> list[JobStatus]:
    """A status per schedule (disabled ones aside), then per pending, paused or running job,
    newest first: every one of them, or the newest ``limit`` jobs.  A schedule's runs and
    failures are those of its ticks in the ``FINISHED_WINDOW`` before ``now``.  Jobs are read
    as summaries: a backlog of thousands is listed without reading their arguments."""
    shown = (ScheduleState.ACTIVE, ScheduleState.PAUSED, ScheduleState.CANCELLED)
    schedules = store.schedules.all(shown)
    stats = store.schedules.stats(now - FINISHED_WINDOW) if schedules else {}
    live = (JobState.PENDING, JobState.PAUSED, JobState.RUNNING)
    active = store.reads.summaries(states=live, limit=limit) if limit != 0 else []
    paused = store.cluster.paused_queues() if active else set()
    return [schedule_status(s, stats.get(s.name, ScheduleStats())) for s in schedules] + [
        job_status(job, paused) for job in active
    ]
