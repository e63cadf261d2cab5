"""``rota jobs``: jobs newest first, as a table or JSON.

Given only ``--state``, ``--task``, ``--queue`` and ``--limit`` it lists as it always did (a
plain JSON list, up to a million rows).  Any other filter option, or ``--cursor``, makes it a
search (``rota.find``): a page of at most ``MAX_PAGE`` jobs with their tags, and the cursor of
the next page, so that a script can walk any number of jobs without the database skipping
rows for it.
"""

from __future__ import annotations

import click

from rota.cli.common import connected, database_options, emit_json, json_option, render
from rota.cli.filters import filter_options, given_options, matching
from rota.cli.show import attempts, job_dict
from rota.cli.tables import NAME, PROSE, Column, Grid
from rota.core.model import Job, JobState
from rota.core.search import MAX_PAGE, Page
from rota.display import NONE, job_state, progress, when

MAX_LIMIT = 1_000_000
PLAIN = frozenset({"state", "task", "queue"})
"""The filter options ``rota jobs`` had before searches: alone, they list as before."""


@click.command()
@filter_options()
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=MAX_LIMIT),
    default=50,
    show_default=True,
    help=f"At most this many (a search: at most {MAX_PAGE}).",
)
@click.option(
    "--cursor",
    default=None,
    metavar="CURSOR",
    help="Go on from where the page that printed this cursor ended.",
)
@database_options
@json_option
def jobs(limit: int, cursor: str | None, url: str | None, table_prefix: str, as_json: bool) -> None:
    """List jobs, newest first.  Filter options other than --state, --task and --queue, or
    --cursor, search (see --tag, --since, --args): the page ends with the next page's cursor,
    and --json prints {"jobs": [...], "next_cursor": ...}."""
    searching = cursor is not None or not given_options() <= PLAIN
    if searching and limit > MAX_PAGE:
        raise click.UsageError(f"a search lists at most {MAX_PAGE} jobs a page (--limit)")
    with connected(url, table_prefix) as rota:
        wanted = matching(rota.clock.now())
        if searching:
            page = rota.find(wanted, limit=limit, cursor=cursor)
        else:
            found = rota.inspect.jobs(
                states=list(wanted.state),
                task=wanted.task[0] if wanted.task else None,
                queue=wanted.queue[0] if wanted.queue else None,
                limit=limit,
            )
    if searching:
        show_page(page, as_json)
        return
    if as_json:
        emit_json([job_dict(job) for job in found])
        return
    if not found:
        click.echo("no jobs")
        return
    rows = Grid(
        Column("id"),
        Column("task", NAME),
        Column("progress", NAME, under="task"),
        Column("queue", NAME, drop=3),
        Column("state"),
        Column("attempt", under="state"),
        Column("run at"),
        Column("started at", under="run at"),
        Column("finished at", drop=2),
        Column("last error"),
        Column("message", PROSE, under="last error"),
    )
    for job in found:
        last = job.errors[-1] if job.errors else None
        rows.add_row(
            str(job.id),
            job.task,
            progress(job.progress) if job.state is JobState.RUNNING else "",
            job.queue,
            job_state(job.state, job.unknown_state),
            attempts(job),
            when(job.run_at),
            when(job.started_at),
            when(job.finished_at),
            last.code if last else NONE,
            (last.message or last.type) if last else "",
        )
    render(rows)


def show_page(page: Page, as_json: bool) -> None:
    """A search's page: its jobs with their tags, then how to ask for the next one."""
    if as_json:
        found = [{**job_dict(job), "tags": list(job.tags), "stuck": job.stuck} for job in page.jobs]
        emit_json({"jobs": found, "next_cursor": page.next_cursor})
        return
    if not page.jobs:
        click.echo("no jobs")
    else:
        render(page_rows(page.jobs))
    if page.next_cursor is not None:
        click.echo(f"next page: --cursor {page.next_cursor}")


def page_rows(found: list[Job]) -> Grid:
    rows = Grid(
        Column("id"),
        Column("task", NAME),
        Column("queue", NAME, drop=3),
        Column("state"),
        Column("tags", NAME, drop=1),
        Column("created at"),
        Column("finished at", under="created at"),
        Column("last error"),
    )
    for job in found:
        last = job.errors[-1] if job.errors else None
        rows.add_row(
            str(job.id),
            job.task,
            job.queue,
            job_state(job.state, job.unknown_state) + (" (stuck)" if job.stuck else ""),
            list(job.tags) or NONE,
            when(job.created_at),
            when(job.finished_at),
            last.code if last else NONE,
        )
    return rows
