"""``rota job`` and ``rota schedules``: what is in the database (``rota jobs`` is in
``listing``).

Everything they print from a row is stored text, whoever wrote it: it is shown escaped
(``rota.core.escaping``; tables escape their cells themselves), a traceback keeping its lines.
``--json`` gives it exactly.
"""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from itertools import islice
from typing import Any

import click

from rota.cli.common import (
    JobId,
    connected,
    database_options,
    emit_json,
    json_option,
    pairs,
    render,
)
from rota.cli.tables import NAME, Column, Grid
from rota.core.checks import LATEST
from rota.core.cron import Cron, zone
from rota.core.escaping import visible, visible_json
from rota.core.model import FINISHED_WINDOW, Job, JobState
from rota.core.schedules import Schedule, ScheduleState, ScheduleStats
from rota.display import NONE, job_state, local, progress, took, when
from rota.errors import RotaError
from rota.store.base import DEPENDENTS_LISTED

NEXT_RUNS = 3


@click.command()
@click.argument("job_id", metavar="ID", type=JobId())
@database_options
@json_option
def job(job_id: int, url: str | None, table_prefix: str, as_json: bool) -> None:
    """Show one job in full: arguments, timings, schedule, every attempt's error."""
    with connected(url, table_prefix) as rota:
        found = rota.job(job_id)
        needed_by = rota.inspect.dependents(job_id)
        steps = rota.steps(job_id)
    if as_json:
        saved = [vars(step) for step in steps]
        emit_json({**job_dict(found, full=True), "needed_by": needed_by, "steps": saved})
        return
    facts = [
        ("id", str(found.id)),
        ("task", found.task),
        ("queue", found.queue),
        (
            "state",
            job_state(found.state, found.unknown_state)
            + (" (cancel requested)" if found.cancel_requested else "")
            + (" (stuck: past its timeout, still heartbeating)" if found.stuck else ""),
        ),
        ("attempt", attempts(found)),
        ("priority", str(found.priority)),
        ("progress", progress(found.progress)),
        ("created at", when(found.created_at)),
        ("run at", when(found.run_at)),
        ("started at", when(found.started_at)),
        ("finished at", when(found.finished_at)),
    ]
    if found.started_at is not None and found.finished_at is not None:
        facts.append(("took", took(found.finished_at - found.started_at)))
    if found.schedule is not None:
        facts.append(("schedule", found.schedule))
        facts.append(("tick", when(found.scheduled_at)))
    if found.unique_key is not None:
        facts.append(("unique key", found.unique_key))
    if found.tags:
        facts.append(("tags", " ".join(found.tags)))
    if found.meta is not None:
        facts.append(("meta", json.dumps(found.meta, ensure_ascii=False)))
    if found.replay_of is not None:
        facts.append(("replay of", str(found.replay_of)))
    if found.lease_owner is not None and found.lease_until is not None:
        facts.append(("leased by", f"{found.lease_owner} until {when(found.lease_until)}"))
    elif found.lease_owner is not None:
        facts.append(("ran on", found.lease_owner))
    if found.state is JobState.WAITING and found.waiting_for is not None:
        until = "no timeout" if found.run_at >= LATEST else f"until {when(found.run_at)}"
        facts.append(("waits for", f"signal {found.waiting_for!r}, {until}"))
    if found.batch_id is not None:
        facts.append(("batch", str(found.batch_id)))
    if found.snoozes:
        facts.append(("snoozes", str(found.snoozes)))
    if found.depends_on:
        facts.append(("depends on", " ".join(map(str, found.depends_on))))
    if needed_by:
        more = " ..." if len(needed_by) == DEPENDENTS_LISTED else ""
        facts.append(("needed by", " ".join(map(str, needed_by)) + more))
    render(pairs(facts))
    if found.unknown_state is not None:
        click.echo("")
        click.echo(
            visible(f"its state {found.unknown_state!r} is not one this rota knows")
            + " (a newer rota's, or a hand edit's): no worker runs, rescues or retries it"
        )
    click.echo("")
    click.echo("arguments")
    if found.payload_error is not None:
        click.echo(f"  unreadable: {visible(found.payload_error)}")
    click.echo(f"  args:   {as_json_text(list(found.args))}")
    click.echo(f"  kwargs: {as_json_text(found.kwargs)}")
    if steps:
        click.echo("")
        click.echo(f"steps ({len(steps)})")
        for step in steps:
            shown = as_json_text(step.result)
            click.echo(f"  {visible(step.name)} at {when(step.finished_at)}: {shown}")
    if found.state is JobState.SUCCEEDED:
        click.echo("")
        click.echo("result")
        click.echo(f"  {as_json_text(found.result)}")
    if not found.errors:
        return
    click.echo("")
    click.echo(f"errors ({len(found.errors)})")
    for error in found.errors:
        click.echo(
            visible(
                f"  attempt {error.attempt} at {when(error.at)}: {error.code} "
                f"{error.type}: {error.message}"
            )
        )
        if error.traceback:
            traceback = visible(error.traceback.rstrip("\n"), newlines=True)
            click.echo(textwrap.indent(traceback, "    "))


@click.group(invoke_without_command=True)
@database_options
@json_option
@click.pass_context
def schedules(ctx: click.Context, url: str | None, table_prefix: str, as_json: bool) -> None:
    """List cron schedules: rule, zone, next run (in the zone), last run, runs and failures of
    the last 24 hours, state, overlap policy.  `rota schedules apply FILE` makes their
    overrides match a file.

    An overridden code schedule shows the code's rule beside the one in force; a schedule whose
    last ticks failed in a row is marked failing.
    """
    if ctx.invoked_subcommand is not None:
        return
    with connected(url, table_prefix) as rota:
        now = rota.clock.now()
        found = rota.inspect.schedules()
        stats = rota.inspect.schedule_stats(now - FINISHED_WINDOW) if found else {}
    if as_json:
        emit_json([schedule_dict(s, stats.get(s.name, ScheduleStats()), now) for s in found])
        return
    if not found:
        click.echo("no schedules")
        return
    other_task = any(s.spec.task != s.name for s in found)
    rows = Grid(
        Column("name", NAME),
        *([Column("task", NAME, under="name")] if other_task else []),
        Column("cron", joiner=" "),
        Column("tz", under="cron", joiner=" "),
        Column("next run"),
        Column("last run", under="next run"),
        Column("runs"),
        Column("failed", under="runs"),
        Column("state", under="runs", joiner=" "),
        Column("overlap", under="cron", joiner=" "),
    )
    for schedule in found:
        stat = stats.get(schedule.name, ScheduleStats())
        upcoming = next_runs(schedule, now)
        task = schedule.spec.task if schedule.spec.task != schedule.name else ""
        rows.add_row(
            schedule.name,
            *([task] if other_task else []),
            cron_cell(schedule),
            tz_cell(schedule),
            local(upcoming[0], zone(schedule.spec.tz)) if upcoming else NONE,
            when(stat.last_run),
            str(stat.runs),
            str(stat.failures),
            state_cell(schedule),
            overlap_cell(schedule),
        )
    render(rows)


def cron_cell(schedule: Schedule) -> list[str]:
    """The cron in force; while overridden, the code's rule beside it, since the code no longer
    says what runs."""
    cron = schedule.spec.cron
    return [cron, f"(override; code: {schedule.code_cron})"] if schedule.overridden else [cron]


def tz_cell(schedule: Schedule) -> list[str]:
    """The zone in force; the code's beside it while an override changed that."""
    tz = schedule.spec.tz
    changed = schedule.overridden and schedule.code_tz != tz
    return [tz, f"(code: {schedule.code_tz})"] if changed else [tz]


def overlap_cell(schedule: Schedule) -> list[str]:
    """The overlap policy in force; the code's beside it while an override changed that."""
    overlap, code = str(schedule.spec.overlap), schedule.code_overlap
    return [overlap, f"(code: {code})"] if code is not None and code != overlap else [overlap]


def state_cell(schedule: Schedule) -> list[str]:
    """The state, with ``(failing)`` after the schedule's last ticks failed in a row."""
    state = schedule.state.value
    return [state, "(failing)"] if schedule.failing else [state]


def next_runs(schedule: Schedule, now: datetime) -> list[datetime]:
    """The next ticks of an active schedule; a paused or ended one has none."""
    if schedule.state is not ScheduleState.ACTIVE:
        return []
    try:
        return list(islice(Cron(schedule.spec.cron, schedule.spec.tz).ticks_after(now), NEXT_RUNS))
    except RotaError:
        return []


def as_json_text(value: Any) -> str:
    """Arguments as JSON on one line, with what would act on a terminal escaped."""
    return visible_json(json.dumps(value, ensure_ascii=False))


def attempts(job: Job) -> str:
    return f"{job.attempt}/{job.max_attempts}" if job.max_attempts else str(job.attempt)


def job_dict(job: Job, full: bool = False) -> dict[str, Any]:
    last = job.errors[-1] if job.errors else None
    data: dict[str, Any] = {
        "id": job.id,
        "task": job.task,
        "queue": job.queue,
        "state": job.state.value,
        "unknown_state": job.unknown_state,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "priority": job.priority,
        "run_at": job.run_at,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "schedule": job.schedule,
        "scheduled_at": job.scheduled_at,
        "progress": {"fraction": job.progress.fraction, "note": job.progress.note}
        if job.progress
        else None,
        "last_error": {"code": last.code, "type": last.type, "message": last.message}
        if last
        else None,
    }
    if full:
        data.update(
            args=list(job.args),
            kwargs=job.kwargs,
            payload_error=job.payload_error,
            errors=[error.to_json() for error in job.errors],
            result=job.result,
            snoozes=job.snoozes,
            unique_key=job.unique_key,
            depends_on=list(job.depends_on),
            cancel_requested=job.cancel_requested,
            lease_owner=job.lease_owner,
            lease_until=job.lease_until,
            waiting_for=job.waiting_for,
            batch_id=job.batch_id,
            tags=list(job.tags),
            meta=job.meta,
            replay_of=job.replay_of,
            stuck=job.stuck,
        )
    return data


def schedule_dict(schedule: Schedule, stats: ScheduleStats, now: datetime) -> dict[str, Any]:
    spec = schedule.spec
    return {
        "name": schedule.name,
        "task": spec.task,
        "cron": spec.cron,
        "tz": spec.tz,
        "code_cron": schedule.code_cron,
        "code_tz": schedule.code_tz,
        "overlap": spec.overlap.value,
        "code_overlap": None if schedule.code_overlap is None else schedule.code_overlap.value,
        "state": schedule.state.value,
        "failing": schedule.failing,
        "source": spec.source.value,
        "queue": spec.queue,
        "priority": spec.priority,
        "next_runs": next_runs(schedule, now),
        "next_run_at": schedule.next_run_at,
        "last_tick": schedule.last_run_at,
        "last_run": stats.last_run,
        "runs": stats.runs,
        "failures": stats.failures,
        "running": stats.running,
        "created_at": schedule.created_at,
        "updated_at": schedule.updated_at,
    }
