"""``rota retry``, ``cancel``, ``pause``, ``resume`` and ``run-now``: acting on jobs and schedules.

Each prints what happened, and exits 1 when its target does not exist or the action does not
apply to it (retrying a job that has not failed, pausing a paused schedule, ...).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

import click

from rota.app import LIVE_WORKER_WINDOW, Rota
from rota.cli.common import connected, database_options, fail
from rota.core.model import JobState, Schedule, ScheduleState
from rota.display import when
from rota.errors import ScheduleNotFound

JOB_ID = re.compile(r"[0-9]+")
RETRYABLE = (JobState.FAILED, JobState.CANCELLED)


@click.command()
@click.argument("job_id", metavar="ID", type=click.IntRange(min=0))
@database_options
def retry(job_id: int, url: str | None, table_prefix: str) -> None:
    """Put a failed or cancelled job back to pending, with a fresh attempt budget."""
    with connected(url, table_prefix) as rota:
        job = rota.job(job_id)
        if job.state not in RETRYABLE:
            raise fail(
                f"job {job_id} is {job.state.value}: only failed or cancelled jobs can be retried"
            )
        if not rota.retry(job_id):
            now = rota.job(job_id).state.value
            raise fail(f"job {job_id} became {now} meanwhile: not retried")
    click.echo(f"job {job_id} ({job.task}) is pending again, with a fresh attempt budget")


@click.command()
@click.argument("target", metavar="ID|NAME")
@database_options
def cancel(target: str, url: str | None, table_prefix: str) -> None:
    """Cancel a job (an integer ID) or a schedule (its NAME).

    A pending job is cancelled at once; a running one is stopped by its worker at its next
    heartbeat. A cancelled schedule enqueues no more jobs.
    """
    with connected(url, table_prefix) as rota:
        if JOB_ID.fullmatch(target):
            click.echo(cancel_job(rota, int(target)))
        else:
            click.echo(cancel_schedule(rota, target))


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
        raise fail(f"schedule {name!r} is {state_of(rota, name)}: nothing to cancel")
    return f"schedule {name!r} cancelled: it enqueues no more jobs"


@click.command()
@click.argument("name", metavar="NAME|ID", required=False)
@click.option("--all", "every", is_flag=True, help="Pause every active schedule.")
@database_options
def pause(name: str | None, every: bool, url: str | None, table_prefix: str) -> None:
    """Pause a schedule (by NAME, which is its ID): no tick runs until it is resumed."""
    one = single(name, every)
    with connected(url, table_prefix) as rota:
        done = switch(rota, one, ScheduleState.ACTIVE, rota.pause, "paused")
    click.echo(done or f"schedule {name!r} paused: no tick runs until it is resumed")


@click.command()
@click.argument("name", metavar="NAME|ID", required=False)
@click.option("--all", "every", is_flag=True, help="Resume every paused schedule.")
@database_options
def resume(name: str | None, every: bool, url: str | None, table_prefix: str) -> None:
    """Resume a paused schedule from its next tick; ticks missed while paused never run."""
    one = single(name, every)
    with connected(url, table_prefix) as rota:
        done = switch(rota, one, ScheduleState.PAUSED, rota.resume, "resumed")
        schedule = rota.store.schedules.get(name) if name and not done else None
    next_run = when(schedule.next_run_at) if schedule is not None else "-"
    click.echo(done or f"schedule {name!r} resumed: next run at {next_run}")


def switch(
    rota: Rota,
    one: str | None,
    source: ScheduleState,
    action: Callable[[str | None], bool],
    verb: str,
) -> str | None:
    """Pause or resume one schedule, or every one in ``source``; a listing when all were."""
    if one is None:
        affected = names(rota, source)
        action(None)
        return listing(verb, affected)
    with not_a_job(one):
        changed = action(one)
    if not changed:
        state = state_of(rota, one)
        raise fail(f"schedule {one!r} is {state}: only {source.value} schedules can be {verb}")
    return None


@click.command("run-now")
@click.argument("name")
@database_options
def run_now(name: str, url: str | None, table_prefix: str) -> None:
    """Queue one job of the schedule NAME now; its cron ticks carry on unchanged."""
    with connected(url, table_prefix) as rota:
        job_id = rota.run_now(name)
        task = rota.job(job_id).task
        live = rota.store.workers(rota.clock.now() - LIVE_WORKER_WINDOW)
    click.echo(f"queued job {job_id} of schedule {name!r} (task {task})")
    if not any(task in worker.tasks for worker in live):
        click.echo(
            f"warning: no live worker registers task {task!r}; the job waits until one does",
            err=True,
        )


def single(name: str | None, every: bool) -> str | None:
    if every == (name is not None):
        raise click.UsageError("give either a schedule NAME or --all")
    return name


def names(rota: Rota, state: ScheduleState) -> list[str]:
    return [schedule.name for schedule in rota.store.schedules.all((state,))]


def listing(verb: str, schedule_names: list[str]) -> str:
    if not schedule_names:
        return f"no schedule to be {verb}"
    return f"{verb} {len(schedule_names)} schedule(s): {', '.join(schedule_names)}"


def state_of(rota: Rota, name: str) -> str:
    schedule: Schedule | None = rota.store.schedules.get(name)
    return schedule.state.value if schedule is not None else "gone"


@contextlib.contextmanager
def not_a_job(name: str) -> Iterator[None]:
    """A missing schedule whose name is a number was probably meant as a job: say so."""
    try:
        yield
    except ScheduleNotFound as error:
        if not JOB_ID.fullmatch(name):
            raise
        raise fail(
            f"{error.code}: {error} (jobs are not paused or resumed; `rota cancel {name}` "
            "cancels a job)"
        ) from error
