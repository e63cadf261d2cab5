"""``rota schedules apply FILE``: make the schedules' runtime overrides match a TOML file.

What the file may say and what it means is ``rota.core.schedule_file``; this command reads the
file, checks all of it against the database before writing anything, prints the changes (one
line each), and makes them through the calls every other client uses (``update_schedule``,
``pause``, ``resume``), recorded in each schedule's history under the actor ``file:<FILE>``.

Each change is its own transaction, made at the version the plan was read from: if someone
changes a schedule between the plan and its change, that change is refused
(``SCHEDULE_CONFLICT``), the command stops with exit code 1, and what it already changed stays
(run it again: it plans from what is there then).  Exit codes: 0 applied, nothing to change, or
a dry run; 1 an operational failure (database, conflict); 2 a file that cannot be applied, in
which case nothing was written.
"""

from __future__ import annotations

from pathlib import Path

import click

from rota.app import Rota
from rota.cli.common import connected, database_options, fail
from rota.cli.control import say
from rota.core.schedule_file import Declared, ScheduleFileError, Step, parse, plan
from rota.errors import RotaError, ScheduleConflict


class BadFile(click.ClickException):
    """A file that cannot be applied: exit code 2, nothing written."""

    exit_code = 2


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print the changes; change nothing.")
@click.option(
    "--prune",
    is_flag=True,
    help="Also reset the overrides of code schedules the file does not name.",
)
@database_options
def apply(file: Path, dry_run: bool, prune: bool, url: str | None, table_prefix: str) -> None:
    """Make the schedules' runtime overrides match FILE, a TOML file with one table per
    schedule name and any of the keys cron, tz, overlap (skip, queue, allow) and enabled.

    For a code schedule a key left out means the code's value (no override); for a runtime
    schedule it keeps the schedule's value; enabled left out keeps paused or active. Prints one
    line per change; a second run prints "no changes". A file with any problem (TOML syntax,
    unknown key, bad value, unknown schedule) changes nothing and exits with 2.
    """
    declared = parse_file(file)
    with connected(url, table_prefix) as rota:
        try:
            steps = plan(declared, rota.inspect.schedules(), prune)
        except ScheduleFileError as error:
            raise bad(file, error) from error
        if not steps:
            say("no changes")
            return
        for step in steps:
            for line in step.lines:
                say(line)
        if dry_run:
            say(f"dry run: {count(steps)} not applied")
            return
        done = run(rota, steps, f"file:{file}")
    say(f"applied {count(steps)} to {done} schedule{'s' if done != 1 else ''}")


def parse_file(file: Path) -> list[Declared]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadFile(f"{file}: cannot be read: {error}") from error
    try:
        return parse(text)
    except ScheduleFileError as error:
        raise bad(file, error) from error


def run(rota: Rota, steps: list[Step], actor: str) -> int:
    """Make the steps, in order, as ``actor``; how many schedules were changed."""
    try:
        with rota.acting_as(actor):
            for done, step in enumerate(steps):
                try:
                    apply_step(rota, step)
                except ScheduleConflict as error:
                    raise fail(
                        f"{error}; {done} of {len(steps)} schedules were changed before it: "
                        "run the command again"
                    ) from error
    except RotaError as error:
        raise fail(f"{error.code}: {error}") from error
    return len(steps)


def apply_step(rota: Rota, step: Step) -> None:
    if step.rule is not None:
        cron, tz, overlap = step.rule
        rota.update_schedule(step.name, cron, tz, overlap.value, version=step.version)
    if step.enabled is True:
        rota.resume(step.name)
    elif step.enabled is False:
        rota.pause(step.name)


def bad(file: Path, error: ScheduleFileError) -> BadFile:
    problems = "\n".join(f"  {problem}" for problem in error.problems)
    return BadFile(f"{file}: nothing changed:\n{problems}")


def count(steps: list[Step]) -> str:
    changes = sum(len(step.lines) for step in steps)
    return f"{changes} change{'s' if changes != 1 else ''}"
