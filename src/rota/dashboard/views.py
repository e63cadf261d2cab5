"""What each dashboard page shows, computed from the ``Rota`` façade and its store only.

Pages never issue SQL of their own: keeping the data in plain dicts built from the store's
protocol methods means a page cannot drift from what ``rota jobs``, ``rota schedules`` or
``rota check`` report.  Counts and stranded jobs are the database's exact aggregates; only the
hourly chart comes from one bounded scan of the newest jobs (``SCAN_LIMIT``), and a page says
so when the scan was cut short.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from rota.app import Rota
from rota.core.cron import Cron, zone
from rota.core.model import (
    MAX_JOB_ID,
    Job,
    JobState,
    Schedule,
    ScheduleState,
    ScheduleStats,
    WorkerInfo,
    claimable,
)
from rota.errors import RotaError

PER_PAGE = 50
SCAN_LIMIT = 10_000
MAX_PAGE = SCAN_LIMIT // PER_PAGE
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
    return JobsQuery(tuple(parsed), task, queue, job_id, page)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc)


def _scan(rota: Rota) -> tuple[list[Job], bool]:
    """The newest jobs, and whether there are more than the scan reads."""
    jobs = rota.store.jobs(limit=SCAN_LIMIT + 1)
    return jobs[:SCAN_LIMIT], len(jobs) > SCAN_LIMIT


def live_workers(rota: Rota, now: datetime) -> list[dict[str, Any]]:
    """Workers with a recent heartbeat, each with the running jobs it leases."""
    workers = rota.store.workers(now)
    running: dict[str, list[Job]] = defaultdict(list)
    if workers:
        for job in rota.store.jobs(states=(JobState.RUNNING,), limit=SCAN_LIMIT):
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


def hourly_chart(jobs: Sequence[Job], now: datetime) -> dict[str, Any]:
    """Succeeded and failed jobs per hour over the last day, laid out as SVG bars.

    The geometry is computed here so the template only places rectangles: no script is needed
    to see the chart, and every number in it is also in a ``<title>`` for screen readers.
    """
    end = _utc(now).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end - timedelta(hours=CHART_HOURS)
    succeeded = [0] * CHART_HOURS
    failed = [0] * CHART_HOURS
    for job in jobs:
        if job.finished_at is None or job.state not in (JobState.SUCCEEDED, JobState.FAILED):
            continue
        finished = _utc(job.finished_at)
        if not start <= finished < end:
            continue
        slot = int((finished - start).total_seconds() // 3600)
        (succeeded if job.state is JobState.SUCCEEDED else failed)[slot] += 1
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
    jobs, truncated = _scan(rota)
    counts = rota.store.counts()
    paused = rota.store.paused_queues()
    empty = dict.fromkeys(counts.by_state, 0)
    return {
        "now": now,
        "states": [state.value for state in JobState],
        "by_state": counts.by_state,
        "by_queue": dict(sorted({**dict.fromkeys(paused, empty), **counts.by_queue}.items())),
        "paused_queues": paused,
        "truncated": truncated,
        "scan_limit": SCAN_LIMIT,
        "chart": hourly_chart(jobs, now),
        "workers": live_workers(rota, now),
        "stranded": rota.store.stranded(now),
    }


def jobs_page(rota: Rota, query: JobsQuery) -> dict[str, Any]:
    """One page of jobs, newest first, and whether a next page exists."""
    if query.job_id is not None:
        found = rota.store.job(query.job_id)
        rows = [found] if found is not None else []
        return {
            "jobs": rows,
            "query": query,
            "prev_query": None,
            "next_query": None,
            "states": list(JobState),
        }
    wanted = query.page * PER_PAGE
    fetched = rota.store.jobs(
        states=query.states, task=query.task, queue=query.queue, limit=wanted + 1
    )
    rows = fetched[wanted - PER_PAGE : wanted]
    has_next = len(fetched) > wanted and query.page < MAX_PAGE
    return {
        "jobs": rows,
        "query": query,
        "prev_query": page_query(query, query.page - 1) if query.page > 1 else None,
        "next_query": page_query(query, query.page + 1) if has_next else None,
        "states": list(JobState),
    }


def page_query(query: JobsQuery, page: int) -> str:
    """The query string of another page of the same filters."""
    pairs: list[tuple[str, str]] = [("state", state.value) for state in query.states]
    for key, value in (("task", query.task), ("queue", query.queue)):
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
        waiting = waiting_reason(job, rota.store.workers(now))
    return {
        "job": job,
        "args": json.dumps(list(job.args), indent=2, ensure_ascii=False),
        "kwargs": json.dumps(job.kwargs, indent=2, ensure_ascii=False),
        "took": took,
        "can_retry": job.state in (JobState.FAILED, JobState.CANCELLED),
        "can_cancel": job.state in (JobState.PENDING, JobState.PAUSED, JobState.RUNNING)
        and not job.cancel_requested,
        "can_pause": job.state is JobState.PENDING,
        "can_resume": job.state is JobState.PAUSED,
        "queue_paused": job.queue in rota.store.paused_queues(),
        "now": now,
        "waiting": waiting,
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


def last_outcome(rota: Rota, schedule: Schedule) -> Job | None:
    """The newest job the schedule enqueued, found among its task's recent jobs."""
    for job in rota.store.jobs(task=schedule.spec.task, limit=200):
        if job.schedule == schedule.name:
            return job
    return None


def schedules_page(rota: Rota) -> dict[str, Any]:
    now = rota.clock.now()
    schedules = rota.store.schedules.all()
    stats = rota.store.schedules.stats() if schedules else {}
    rows = []
    for schedule in schedules:
        stat = stats.get(schedule.name, ScheduleStats())
        rows.append(
            {
                "schedule": schedule,
                "description": describe(schedule),
                "next_runs": next_runs(schedule, now),
                "stats": stat,
                "last_job": last_outcome(rota, schedule) if stat.last_run else None,
                "paused": schedule.state is ScheduleState.PAUSED,
                "can_pause": schedule.state is ScheduleState.ACTIVE,
                "can_resume": schedule.state is ScheduleState.PAUSED,
                "can_run": schedule.state in (ScheduleState.ACTIVE, ScheduleState.PAUSED),
            }
        )
    return {"schedules": rows, "now": now}


def workers_page(rota: Rota) -> dict[str, Any]:
    now = rota.clock.now()
    return {"workers": live_workers(rota, now), "now": now}


def _label(value: str) -> str:
    """A Prometheus label value, escaped as the text format requires."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def metrics(rota: Rota) -> str:
    """The Prometheus text exposition (format 0.0.4) of jobs, workers and schedules."""
    now = rota.clock.now()
    counts = rota.store.counts()
    by_state = counts.by_state
    by_queue = {
        (queue, state): count
        for queue, states in counts.by_queue.items()
        for state, count in states.items()
        if count
    }
    workers = rota.store.workers(now)
    schedules = Counter(s.state.value for s in rota.store.schedules.all())
    lines = [
        "# HELP rota_jobs Jobs by state.",
        "# TYPE rota_jobs gauge",
    ]
    lines += [f'rota_jobs{{state="{s.value}"}} {by_state.get(s.value, 0)}' for s in JobState]
    lines += ["# HELP rota_jobs_queue Jobs by queue and state.", "# TYPE rota_jobs_queue gauge"]
    lines += [
        f'rota_jobs_queue{{queue="{_label(queue)}",state="{state}"}} {count}'
        for (queue, state), count in sorted(by_queue.items())
    ]
    lines += [
        "# HELP rota_workers_live Workers that missed fewer than two heartbeats.",
        "# TYPE rota_workers_live gauge",
        f"rota_workers_live {len(workers)}",
        "# HELP rota_schedules Schedules by state.",
        "# TYPE rota_schedules gauge",
    ]
    lines += [
        f'rota_schedules{{state="{s.value}"}} {schedules.get(s.value, 0)}' for s in ScheduleState
    ]
    return "\n".join(lines) + "\n"
