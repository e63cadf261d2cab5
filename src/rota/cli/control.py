"""``rota retry``, ``cancel``, ``pause``, ``resume`` and ``run-now``: acting on jobs and schedules.

Given filter options instead of a target, the first four act on every matching job
(``bulk``).
Each prints what happened, and exits 1 when its target does not exist or the action does not
apply to it (retrying a job that has not failed, pausing a paused schedule, ...).  An integer
target is a job id, anything else a schedule name.  What they print names tasks, queues and
schedules read from the database, so it goes out through ``say``, escaped.
"""

from __future__ import annotations

import re

import click

from rota.app import Rota
from rota.cli.bulk import acted_on_matching, bulk_options, one_target
from rota.cli.common import JobId, connected, database_options, fail, job_id
from rota.core.escaping import visible
from rota.core.model import JobState
from rota.core.schedules import Schedule, ScheduleState
from rota.display import when
from rota.errors import ScheduleNotFound

JOB_ID = re.compile(r"[0-9]+", re.ASCII)
RETRYABLE = (JobState.FAILED, JobState.CANCELLED)


@click.command()
@click.argument("job_id", metavar="ID", type=JobId(), required=False)
@bulk_options()
@database_options
def retry(job_id: int | None, yes: bool, url: str | None, table_prefix: str) -> None:
    """Put a failed or cancelled job back to pending, with a fresh attempt budget; or, with
    filter options, every failed or cancelled job they match."""
    if acted_on_matching("retry", yes, url, table_prefix, job_id):
        return
    one_target(job_id)
    assert job_id is not None
    with connected(url, table_prefix) as rota:
        job = rota.job(job_id)
        if job.state not in RETRYABLE:
            raise fail(
                f"job {job_id} is {job.state.value}: only failed or cancelled jobs can be retried"
            )
        if not rota.retry(job_id):
            now = rota.job(job_id).state.value
            raise fail(f"job {job_id} became {now} meanwhile: not retried")
    say(f"job {job_id} ({job.task}) is pending again, with a fresh attempt budget")


@click.command()
@click.argument("target", metavar="ID|NAME", required=False)
@bulk_options()
@database_options
def cancel(target: str | None, yes: bool, url: str | None, table_prefix: str) -> None:
    """Cancel a job (an integer ID) or a schedule (its NAME); or, with filter options, every
    matching job that has not ended.

    A pending job is cancelled at once; a running one is stopped by its worker at its next
    heartbeat. A cancelled schedule enqueues no more jobs.
    """
    if acted_on_matching("cancel", yes, url, table_prefix, target):
        return
    one_target(target, "a job ID, a schedule NAME")
    assert target is not None
    with connected(url, table_prefix) as rota:
        if JOB_ID.fullmatch(target):
            say(cancel_job(rota, job_id(target)))
        else:
            say(cancel_schedule(rota, target))


def cancel_job(rota: Rota, job_id: int) -> str:
    before = rota.job(job_id)
    if before.state.is_final:
        raise fail(f"job {job_id} has ended ({before.state.value}): nothing to cancel")
    rota.cancel(job_id)
    after = rota.job(job_id)
    if after.state is JobState.CANCELLED:
        return f"job {job_id} ({after.task}) cancelled"
    if after.state is JobState.RUNNING and after.cancel_requested:
        return f"job {job_id} ({after.task}) is running: its worker stops it at the next heartbeat"
    raise fail(f"job {job_id} {after.state.value} meanwhile: nothing to cancel")


def cancel_schedule(rota: Rota, name: str) -> str:
    if not rota.cancel(name):
        state = state_of(rota, name)
        if state == "gone":
            raise ScheduleNotFound(f"schedule {name!r} does not exist")
        raise fail(f"schedule {name!r} is {state}: nothing to cancel")
    return f"schedule {name!r} cancelled: it enqueues no more jobs"


@click.command()
@click.argument("target", metavar="ID|NAME", required=False)
@click.option("--queue", "queue", metavar="QUEUE", help="Pause a queue, on every worker.")
@click.option("--all", "every", is_flag=True, help="Pause every schedule and every queue.")
@bulk_options(queue_flag="--in-queue")
@database_options
def pause(
    target: str | None,
    queue: str | None,
    every: bool,
    yes: bool,
    url: str | None,
    table_prefix: str,
) -> None:
    """Pause a pending job (an integer ID), a schedule (its NAME), a queue (--queue),
    everything (--all), or every pending job the filter options match (their queue:
    --in-queue). Nothing paused runs until it is resumed."""
    if acted_on_matching("pause", yes, url, table_prefix, target, queue, every):
        return
    which = single(target, queue, every)
    with connected(url, table_prefix) as rota:
        say(switch(rota, which, paused=True))


@click.command()
@click.argument("target", metavar="ID|NAME", required=False)
@click.option("--queue", "queue", metavar="QUEUE", help="Resume a paused queue.")
@click.option("--all", "every", is_flag=True, help="Resume every schedule and every queue.")
@bulk_options(queue_flag="--in-queue")
@database_options
def resume(
    target: str | None,
    queue: str | None,
    every: bool,
    yes: bool,
    url: str | None,
    table_prefix: str,
) -> None:
    """Resume a paused job, schedule (from its next tick; ticks missed while paused never
    run), queue (--queue), everything (--all), or every paused job the filter options match
    (their queue: --in-queue)."""
    if acted_on_matching("resume", yes, url, table_prefix, target, queue, every):
        return
    which = single(target, queue, every)
    with connected(url, table_prefix) as rota:
        say(switch(rota, which, paused=False))


def switch(rota: Rota, which: tuple[str, str | None], *, paused: bool) -> str:
    kind, target = which
    verb = "paused" if paused else "resumed"
    if kind == "all":
        return switch_all(rota, paused=paused)
    assert target is not None
    if kind == "queue":
        changed = rota.pause_queue(target) if paused else rota.resume_queue(target)
        if not changed:
            raise fail(f"queue {target!r} is {'already' if paused else 'not'} paused")
        if paused:
            return f"queue {target!r} paused: no worker claims from it until it is resumed"
        return f"queue {target!r} resumed"
    if JOB_ID.fullmatch(target):
        number = job_id(target)
        if not (rota.pause(number) if paused else rota.resume(number)):
            job = rota.job(number)
            if not paused and job.queue in rota.paused_queues():
                raise fail(f"job {number} waits in the paused queue {job.queue!r}: resume it")
            source = "pending" if paused else "paused"
            raise fail(f"job {number} is {job.state.value}: only {source} jobs can be {verb}")
        if paused:
            return f"job {number} paused: no worker claims it until it is resumed"
        return f"job {number} resumed: it is pending again"
    if not (rota.pause(target) if paused else rota.resume(target)):
        source = "active" if paused else "paused"
        state = state_of(rota, target)
        raise fail(f"schedule {target!r} is {state}: only {source} schedules can be {verb}")
    if paused:
        return f"schedule {target!r} paused: no tick runs until it is resumed"
    schedule = rota.inspect.schedule(target)
    next_run = when(schedule.next_run_at) if schedule is not None else "-"
    return f"schedule {target!r} resumed: next run at {next_run}"


def switch_all(rota: Rota, *, paused: bool) -> str:
    """Pause or resume every schedule and queue; list what changed."""
    source = ScheduleState.ACTIVE if paused else ScheduleState.PAUSED
    schedules = names(rota, source)
    queues_before = set(rota.paused_queues())
    if paused:
        rota.pause()
    else:
        rota.resume()
    queues = sorted(set(rota.paused_queues()) ^ queues_before)
    verb = "paused" if paused else "resumed"
    if not schedules and not queues:
        return f"nothing to be {verb}"
    parts = [
        f"{len(items)} {kind}(s): {', '.join(items)}"
        for kind, items in (("schedule", schedules), ("queue", queues))
        if items
    ]
    return f"{verb} {'; '.join(parts)}"


@click.command("run-now")
@click.argument("name")
@database_options
def run_now(name: str, url: str | None, table_prefix: str) -> None:
    """Queue one job of the schedule NAME now; its cron ticks carry on unchanged."""
    with connected(url, table_prefix) as rota:
        job_id = rota.run_now(name)
        task = rota.job(job_id).task
        live = rota.inspect.workers()
    say(f"queued job {job_id} of schedule {name!r} (task {task})")
    if not any(task in worker.tasks for worker in live):
        say(
            f"warning: no live worker registers task {task!r}; the job waits until one does",
            err=True,
        )


def say(message: str, err: bool = False) -> None:
    """Print a line that names what is in the database (stored text), escaped."""
    click.echo(visible(message), err=err)


def single(target: str | None, queue: str | None, every: bool) -> tuple[str, str | None]:
    """Which one of a job or schedule, ``--queue`` or ``--all`` was asked for."""
    given = [kind for kind, on in (("one", target), ("queue", queue), ("all", every)) if on]
    if len(given) != 1:
        raise click.UsageError("give one of: a job ID or schedule NAME, --queue QUEUE, --all")
    if given[0] == "all":
        return "all", None
    return given[0], target if given[0] == "one" else queue


def names(rota: Rota, state: ScheduleState) -> list[str]:
    return [schedule.name for schedule in rota.inspect.schedules((state,))]


def state_of(rota: Rota, name: str) -> str:
    schedule: Schedule | None = rota.inspect.schedule(name)
    return schedule.state.value if schedule is not None else "gone"
