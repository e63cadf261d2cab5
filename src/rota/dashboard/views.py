"""What each dashboard page shows, computed from the ``Rota`` façade (``rota.inspect``) only.

Pages never issue SQL of their own: keeping the data in plain dicts built from the store's
protocol methods means a page cannot drift from what ``rota jobs``, ``rota schedules`` or
``rota check`` report.  Counts, stranded jobs and the hourly chart are the database's exact
aggregates, and lists read job summaries, which leave the arguments out: no page but a job's
own reads a payload, so a page's memory does not grow with what users put in their jobs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from rota.app import Rota
from rota.core.checks import LATEST
from rota.core.cron import Cron, zone
from rota.core.model import (
    FINISHED_WINDOW,
    LIVE_STATES,
    MAX_JOB_ID,
    Job,
    JobState,
    WorkerInfo,
)
from rota.core.names import name_problem
from rota.core.schedules import Schedule, ScheduleState, ScheduleStats
from rota.core.stranded import claimable
from rota.errors import RotaError
from rota.store.base import DEPENDENTS_LISTED
from rota.store.values import JobSummary

PER_PAGE = 50
MAX_PAGE = 200
"""Pages reach back 10,000 jobs; filters find older ones (a deeper OFFSET makes the database
walk every row it skips)."""
RUNNING_LIMIT = 10_000
"""The most running jobs the workers' table lists (more than any cluster's concurrency)."""
NEXT_RUNS = 5
CHART_HOURS = 24
MAX_DIGITS = len(str(MAX_JOB_ID))


class BadQuery(ValueError):
    """A query-string value the page cannot use; shown to the user with status 400."""


@dataclass(frozen=True)
class JobsQuery:
    """The filters of ``/jobs``, validated."""

    states: tuple[JobState, ...] = ()
    task: str | None = None
    queue: str | None = None
    job_id: int | None = None
    page: int = 1
    namespace: str | None = None
    """Another service's jobs; ``None``: the app's."""


def shown(value: str, limit: int = 40) -> str:
    """A query value quoted for an error message, cut short when long."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}..."


def whole_number(text: str) -> int | None:
    """``text`` as a non-negative integer of ASCII digits, or ``None``.

    ``str.isdigit`` also accepts superscripts and other scripts' digits, which ``int`` may
    refuse, and ``int`` refuses more than 4,300 digits: both are checked before converting.
    """
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > MAX_DIGITS:
        return None
    return int(text)


def parse_job_id(text: str) -> int | None:
    """A job id from a path or query value; ``None`` when it cannot name a job."""
    value = whole_number(text)
    return value if value is not None and 0 < value <= MAX_JOB_ID else None


def parse_jobs_query(params: Mapping[str, str], states: Sequence[str]) -> JobsQuery:
    """Validate the ``/jobs`` query; every bad value is a ``BadQuery`` naming it."""
    parsed: list[JobState] = []
    for value in states:
        if not value:
            continue
        try:
            parsed.append(JobState(value))
        except ValueError:
            allowed = ", ".join(state.value for state in JobState)
            raise BadQuery(f"unknown state {shown(value)}: use one of {allowed}") from None
    page_text = params.get("page", "1").strip() or "1"
    page = whole_number(page_text)
    if page is None or not 1 <= page <= MAX_PAGE:
        raise BadQuery(f"page must be a whole number from 1 to {MAX_PAGE}, got {shown(page_text)}")
    job_id = None
    id_text = params.get("id", "").strip()
    if id_text:
        job_id = parse_job_id(id_text)
        if job_id is None:
            raise BadQuery(f"a job id is a positive whole number, got {shown(id_text)}")
    task = params.get("task", "").strip() or None
    queue = params.get("queue", "").strip() or None
    for name, given in (("task", task), ("queue", queue)):
        if given is not None and len(given) > 255:
            raise BadQuery(f"{name} must be at most 255 characters")
    namespace = params.get("namespace", "").strip() or None
    why = None if namespace is None else name_problem("namespace", namespace)
    if why is not None:
        raise BadQuery(why)
    return JobsQuery(tuple(parsed), task, queue, job_id, page, namespace)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc)


def live_workers(rota: Rota, now: datetime) -> list[dict[str, Any]]:
    """Workers with a recent heartbeat, each with the running jobs it leases."""
    workers = rota.inspect.workers(now)
    running: dict[str, list[JobSummary]] = defaultdict(list)
    if workers:
        for job in rota.inspect.summaries(states=(JobState.RUNNING,), limit=RUNNING_LIMIT):
            if job.lease_owner is not None:
                running[job.lease_owner].append(job)
    return [
        {
            "id": worker.id,
            "host": worker.host,
            "pid": worker.pid,
            "queues": worker.queues,
            "concurrency": worker.concurrency,
            "started_at": worker.started_at,
            "heartbeat_at": worker.heartbeat_at,
            "heartbeat_age": now - worker.heartbeat_at,
            "running": running.get(worker.id, []),
        }
        for worker in workers
    ]


def chart_hours(now: datetime) -> list[datetime]:
    """The bounds of the chart's hours: the last ``CHART_HOURS`` whole UTC hours up to the end
    of the current one."""
    end = _utc(now).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    return [end - timedelta(hours=CHART_HOURS - n) for n in range(CHART_HOURS + 1)]


def hourly_chart(per_hour: Mapping[str, Sequence[int]], start: datetime) -> dict[str, Any]:
    """Succeeded and failed jobs per hour from ``start`` (``Store.finished_per_period`` over
    ``chart_hours``), laid out as SVG bars.

    The geometry is computed here so the template only places rectangles: no script is needed
    to see the chart, and every number in it is also in a ``<title>`` for screen readers.
    """
    succeeded = per_hour[JobState.SUCCEEDED.value]
    failed = per_hour[JobState.FAILED.value]
    width, height, gap = 24, 120, 2
    top = max([*succeeded, *failed, 1])
    bars = []
    for slot in range(CHART_HOURS):
        hour = start + timedelta(hours=slot)
        x = slot * (width + gap)
        ok_h = round(succeeded[slot] / top * height, 1)
        bad_h = round(failed[slot] / top * height, 1)
        bars.append(
            {
                "hour": hour,
                "label": hour.strftime("%H"),
                "x": x,
                "half": width // 2,
                "succeeded": succeeded[slot],
                "failed": failed[slot],
                "ok_y": height - ok_h,
                "ok_h": ok_h,
                "bad_y": height - bad_h,
                "bad_h": bad_h,
            }
        )
    return {
        "bars": bars,
        "width": CHART_HOURS * (width + gap),
        "height": height,
        "top": top,
        "succeeded": sum(succeeded),
        "failed": sum(failed),
    }


def waiting_reason(job: Job, workers: Sequence[WorkerInfo]) -> str | None:
    """Why no live worker can claim this pending job (as ``rota check`` says), else ``None``."""
    if (job.task, job.queue) in claimable(workers):
        return None
    if any(job.task in worker.tasks for worker in workers):
        return f"no live worker with task {job.task!r} serves queue {job.queue!r}"
    return f"no live worker registers task {job.task!r}"


def overview(rota: Rota) -> dict[str, Any]:
    now = rota.clock.now()
    hours = chart_hours(now)
    counts = rota.counts(finished_since=now - FINISHED_WINDOW)
    paused = rota.inspect.paused_queues()
    empty = dict.fromkeys(counts.by_state, 0)
    return {
        "now": now,
        "states": list(counts.by_state),
        "by_state": counts.by_state,
        "by_queue": dict(sorted({**dict.fromkeys(paused, empty), **counts.by_queue}.items())),
        "paused_queues": paused,
        "chart": hourly_chart(rota.inspect.finished_per_period(hours), hours[0]),
        "workers": live_workers(rota, now),
        "stranded": rota.inspect.stranded(now),
        "stuck": rota.inspect.stuck(),
    }


def jobs_page(rota: Rota, query: JobsQuery) -> dict[str, Any]:
    """One page of job summaries, newest first, and whether a next page exists; with a job id,
    that job alone."""
    page: dict[str, Any] = {
        "query": query,
        "prev_query": None,
        "next_query": None,
        "states": list(JobState),
        "namespaces": rota.inspect.namespaces(),
    }
    if query.job_id is not None:
        return {**page, "jobs": rota.inspect.summaries(job_id=query.job_id, limit=1)}
    fetched = rota.inspect.of(query.namespace).summaries(
        states=query.states,
        task=query.task,
        queue=query.queue,
        limit=PER_PAGE + 1,
        offset=(query.page - 1) * PER_PAGE,
    )
    has_next = len(fetched) > PER_PAGE and query.page < MAX_PAGE
    return {
        **page,
        "jobs": fetched[:PER_PAGE],
        "stuck": stuck_ids(rota, query.namespace, fetched[:PER_PAGE]),
        "prev_query": page_query(query, query.page - 1) if query.page > 1 else None,
        "next_query": page_query(query, query.page + 1) if has_next else None,
    }


def stuck_ids(rota: Rota, namespace: str | None, jobs: Sequence[JobSummary]) -> set[int]:
    """Which of ``jobs`` are stuck (``core.stuck``): read only when one of them runs, as a
    summary leaves the mark out."""
    if not any(job.state is JobState.RUNNING for job in jobs):
        return set()
    return {job.id for job in rota.inspect.of(namespace).stuck()}


def page_query(query: JobsQuery, page: int) -> str:
    """The query string of another page of the same filters."""
    pairs: list[tuple[str, str]] = [("state", state.value) for state in query.states]
    for key, value in (
        ("task", query.task),
        ("queue", query.queue),
        ("namespace", query.namespace),
    ):
        if value:
            pairs.append((key, value))
    return urlencode([*pairs, ("page", str(page))])


def job_detail(rota: Rota, job_id: int) -> dict[str, Any]:
    """One job in full; ``JobNotFound`` propagates as a 404."""
    job = rota.job(job_id)
    now = rota.clock.now()
    took = None
    if job.started_at is not None and job.finished_at is not None:
        took = job.finished_at - job.started_at
    waiting = None
    if job.state is JobState.PENDING:
        waiting = waiting_reason(job, rota.inspect.workers(now))
    needed_by = rota.inspect.dependents(job.id)
    queue_paused = job.queue in rota.inspect.paused_queues()
    return {
        "job": job,
        "args": json.dumps(list(job.args), indent=2, ensure_ascii=False),
        "kwargs": json.dumps(job.kwargs, indent=2, ensure_ascii=False),
        "result": json.dumps(job.result, indent=2, ensure_ascii=False)
        if job.state is JobState.SUCCEEDED
        else None,
        "took": took,
        "can_retry": job.state in (JobState.FAILED, JobState.CANCELLED),
        "can_cancel": job.state in LIVE_STATES and not job.cancel_requested,
        "can_pause": job.state is JobState.PENDING,
        "can_resume": job.state is JobState.PAUSED and not queue_paused,
        "queue_paused": queue_paused,
        "now": now,
        "waiting": waiting,
        "needed_by": needed_by,
        "more_needed_by": len(needed_by) == DEPENDENTS_LISTED,
        "steps": [
            (step, json.dumps(step.result, indent=2, ensure_ascii=False))
            for step in rota.steps(job.id)
        ],
        "no_timeout": job.run_at >= LATEST,
    }


def next_runs(schedule: Schedule, now: datetime) -> list[str]:
    """The next ticks of an active schedule in its own zone; a paused or ended one has none."""
    if schedule.state is not ScheduleState.ACTIVE:
        return []
    try:
        cron = Cron(schedule.spec.cron, schedule.spec.tz)
        local = zone(schedule.spec.tz)
        ticks = list(islice(cron.ticks_after(now), NEXT_RUNS))
    except RotaError:
        return []
    return [tick.astimezone(local).isoformat(sep=" ", timespec="minutes") for tick in ticks]


def describe(schedule: Schedule) -> str:
    try:
        return Cron(schedule.spec.cron, schedule.spec.tz).describe()
    except (RotaError, ValueError):
        return "(cannot describe this expression)"


def schedules_page(rota: Rota) -> dict[str, Any]:
    now = rota.clock.now()
    schedules = rota.inspect.schedules()
    stats = rota.inspect.schedule_stats(now - FINISHED_WINDOW) if schedules else {}
    last_jobs = rota.inspect.last_scheduled() if stats else {}
    rows = []
    for schedule in schedules:
        stat = stats.get(schedule.name, ScheduleStats())
        rows.append(
            {
                "schedule": schedule,
                "description": describe(schedule),
                "next_runs": next_runs(schedule, now),
                "stats": stat,
                "last_job": last_jobs.get(schedule.name) if stat.last_run else None,
                "paused": schedule.state is ScheduleState.PAUSED,
                "can_pause": schedule.state is ScheduleState.ACTIVE,
                "can_resume": schedule.state is ScheduleState.PAUSED,
                "can_run": schedule.state in (ScheduleState.ACTIVE, ScheduleState.PAUSED),
            }
        )
    return {"schedules": rows, "now": now}


def workers_page(rota: Rota) -> dict[str, Any]:
    now = rota.clock.now()
    return {
        "workers": live_workers(rota, now),
        "now": now,
        "conflicts": rota.inspect.conflicts(now),
    }
