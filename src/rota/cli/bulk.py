"""Acting on many jobs at once, and on one job's contents: the bulk forms of ``rota retry``,
``cancel``, ``pause``, ``resume`` and ``delete`` (their filter options instead of an id), and
``rota delete``, ``rota update`` and ``rota replay`` of one job.

A bulk action first says how many jobs match and asks before it acts (``--yes`` skips the
question, for scripts): a filter typed a little too wide reaches thousands of jobs, and a
retry or a delete cannot be taken back.  The count is the one shown when asked: jobs that
start matching between the question and the action are acted on too (the façade walks the
matching jobs as they are then), so the number changed is printed after.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import click

from rota.app import Rota
from rota.cli.common import JobId, connected, database_options, fail
from rota.cli.filters import filter_options, given_options, matching
from rota.core.escaping import visible

F = TypeVar("F", bound=Callable[..., Any])
DONE = {
    "retry": "retried",
    "cancel": "cancelled (or asked to stop)",
    "pause": "paused",
    "resume": "resumed",
    "delete": "deleted",
}


def bulk_options(*, queue_flag: str = "--queue") -> Callable[[F], F]:
    """The filter options and ``--yes``, for a command that acts on one target or on every
    job a filter matches."""

    def decorate(command: F) -> F:
        command = click.option(
            "--yes", "-y", "yes", is_flag=True, help="Act on the matching jobs without asking."
        )(command)
        return filter_options(queue_flag=queue_flag)(command)

    return decorate


def filtering(*targets: object) -> bool:
    """Whether the command acts on a filter's jobs: filter options given, and no id nor other
    target beside them (that is a usage error: which of the two was meant?)."""
    if not given_options():
        return False
    if any(target not in (None, False) for target in targets):
        raise click.UsageError("give a job ID or filter options, not both")
    return True


def acted_on_matching(
    action: str, yes: bool, url: str | None, table_prefix: str, *targets: object
) -> bool:
    """With filter options (and no target beside them): count, ask and act on the matching
    jobs, then ``True``; ``False`` when the command acts on its target instead."""
    if not filtering(*targets):
        return False
    with connected(url, table_prefix) as rota:
        act_on_matching(rota, action, yes)
    return True


def one_target(target: object, what: str = "a job ID") -> None:
    """A usage error unless the command, given no filter options, names its target."""
    if target is None:
        raise click.UsageError(f"give {what} or filter options (see --help)")


def act_on_matching(rota: Rota, action: str, yes: bool) -> None:
    """Count, ask, act on every job the command's filter matches, and say how many changed."""
    wanted = matching(rota.clock.now())
    count = rota.count(wanted)
    click.echo(f"{count} job{'' if count == 1 else 's'} match{'es' if count == 1 else ''}")
    if count == 0:
        return
    if not yes and not click.confirm(f"{action} them?", default=False):
        click.echo("nothing changed")
        return
    changed = getattr(rota, action)(matching=wanted)
    click.echo(f"{changed} job{'' if changed == 1 else 's'} {DONE[action]}")


@click.command()
@click.argument("job_id", metavar="ID", type=JobId(), required=False)
@bulk_options()
@database_options
def delete(job_id: int | None, yes: bool, url: str | None, table_prefix: str) -> None:
    """Delete a job (an integer ID) that is not running nor waiting, with its steps and tags;
    or, with filter options, every such job they match."""
    if acted_on_matching("delete", yes, url, table_prefix, job_id):
        return
    one_target(job_id)
    assert job_id is not None
    with connected(url, table_prefix) as rota:
        job = rota.job(job_id)
        if not rota.delete(job_id):
            raise fail(f"job {job_id} is {job.state.value}: running or waiting jobs are kept")
    click.echo(visible(f"job {job_id} ({job.task}) deleted"))


@click.command()
@click.argument("job_id", metavar="ID", type=JobId())
@click.option("--run-at", "run_at", metavar="ISO", help="Run it at this time (ISO 8601).")
@click.option("--delay", type=click.FloatRange(min=0), help="Run it this many seconds from now.")
@click.option("--priority", type=int, help="Its new priority (lower runs first).")
@click.option("--queue", metavar="QUEUE", help="Move it to this queue.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Its tags (replace them).")
@click.option("--meta", metavar="JSON", help="Its metadata, a JSON object (replaces it).")
@database_options
def update(
    job_id: int,
    run_at: str | None,
    delay: float | None,
    priority: int | None,
    queue: str | None,
    tags: tuple[str, ...],
    meta: str | None,
    url: str | None,
    table_prefix: str,
) -> None:
    """Change a pending or paused job: when it runs, its priority, queue, tags or metadata.
    Exits 1 once a worker claimed it or it ended."""
    if run_at is not None and delay is not None:
        raise click.UsageError("give --run-at or --delay, not both")
    changes: dict[str, Any] = {"priority": priority, "queue": queue}
    if run_at is not None:
        changes["run_at"] = moment(run_at)
    if tags:
        changes["tags"] = list(tags)
    if meta is not None:
        changes["meta"] = json_object(meta)
    if not any(value is not None for value in changes.values()) and delay is None:
        raise click.UsageError("give what to change: --run-at, --delay, --priority, ...")
    with connected(url, table_prefix) as rota:
        if delay is not None:
            changes["run_at"] = rota.clock.now() + timedelta(seconds=delay)
        if not rota.update_job(job_id, **changes):
            state = rota.job(job_id).state.value
            raise fail(f"job {job_id} is {state}: only pending or paused jobs can be changed")
    click.echo(f"job {job_id} updated")


@click.command()
@click.argument("job_id", metavar="ID", type=JobId())
@database_options
def replay(job_id: int, url: str | None, table_prefix: str) -> None:
    """Queue a copy of a finished job (same task, arguments, queue, priority, tags and meta),
    due now; prints the new job's id."""
    with connected(url, table_prefix) as rota:
        new = rota.replay(job_id)
    click.echo(str(new))


def moment(text: str) -> datetime:
    """An ISO 8601 time; one without an offset is taken as UTC, as rota's times all are."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"not an ISO 8601 time: {text[:40]!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise click.BadParameter(f"--meta is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise click.BadParameter("--meta must be a JSON object")
    return value
