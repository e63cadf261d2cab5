"""The filter options of ``rota jobs`` and of the bulk forms of ``retry``, ``cancel``,
``pause``, ``resume`` and ``delete``: one decorator adds them, one function turns what was
given into the ``Filter`` that ``rota.find``, ``rota.count`` and the bulk actions take.

The options are not passed to the commands as parameters: they are gathered in the click
context, so each command's signature stays what it was and no command rebuilds a ``Filter``
by hand.  ``--since 2h`` is a duration back from the database's clock as the command's Rota
reads it, turned into ``created_after`` only once that Rota exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import click

from rota.core.model import JobState
from rota.core.search import Filter

F = TypeVar("F", bound=Callable[..., Any])
GIVEN = "rota.filter"
"""Where the options given are kept in the click context's ``meta``."""
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DURATION = re.compile(r"(\d{1,9})([smhdw])", re.ASCII)
PREFIX = "filter_"
"""Of the options' names: click's parser keeps values by name, so a filter's ``queue`` must
not share one with ``rota pause --queue``'s."""
STATES = [state.value for state in JobState if state is not JobState.UNKNOWN]


def duration(text: str) -> timedelta:
    """``30m``, ``2h``, ``1d12h``: whole numbers of seconds, minutes, hours, days, weeks."""
    parts = DURATION.findall(text.strip())
    if not parts or "".join(n + unit for n, unit in parts) != text.strip():
        raise click.BadParameter(f"a duration is as 30m, 2h or 1d12h, got {text[:40]!r}")
    return timedelta(seconds=sum(int(n) * UNITS[unit] for n, unit in parts))


def _keep(context: click.Context, parameter: click.Parameter, value: Any) -> None:
    """Keep an option that was given (an empty repeatable one was not), by its field's name."""
    if value is None or value == ():
        return
    assert parameter.name is not None
    field = parameter.name.removeprefix(PREFIX)
    if field in ("since", "finished_since"):
        value = duration(value)
    context.meta.setdefault(GIVEN, {})[field] = value


def filter_options(*, queue_flag: str = "--queue") -> Callable[[F], F]:
    """The filter options.  ``queue_flag``: ``rota pause`` and ``resume`` already take
    ``--queue`` for pausing a whole queue, so there the filter's is ``--in-queue``."""

    def option(flag: str, field: str, **settings: Any) -> Callable[[F], F]:
        return click.option(flag, PREFIX + field, expose_value=False, callback=_keep, **settings)

    def decorate(command: F) -> F:
        for add in reversed(
            (
                option(
                    "--state",
                    "state",
                    multiple=True,
                    type=click.Choice(STATES),
                    help="Only jobs in this state; repeat for several (any of them).",
                ),
                option("--task", "task", metavar="TASK", help="Only jobs of this task."),
                option(queue_flag, "queue", metavar="QUEUE", help="Only jobs of this queue."),
                option(
                    "--tag",
                    "tags",
                    multiple=True,
                    metavar="TAG",
                    help="Only jobs carrying this tag; repeat: every one must be carried.",
                ),
                option("--schedule", "schedule", metavar="NAME", help="Only this schedule's."),
                option(
                    "--error", "error_code", metavar="CODE", help="Only jobs whose error is CODE."
                ),
                option(
                    "--since",
                    "since",
                    metavar="DURATION",
                    help="Only jobs created in the last DURATION (30m, 2h, 7d).",
                ),
                option(
                    "--finished-since",
                    "finished_since",
                    metavar="DURATION",
                    help="Only jobs that finished in the last DURATION.",
                ),
                option(
                    "--args",
                    "args_match",
                    metavar="TEXT",
                    help="Only jobs whose arguments, as JSON, contain TEXT.",
                ),
            )
        ):
            command = add(command)
        return command

    return decorate


def given_options() -> set[str]:
    """The filter options the running command was given (their ``Filter`` field names, and
    ``since`` / ``finished_since``)."""
    return set(click.get_current_context().meta.get(GIVEN, {}))


def matching(now: datetime) -> Filter:
    """The ``Filter`` the running command's options say, durations counted back from ``now``.
    A value the filter refuses (a tag with a control character, ...) raises
    ``InvalidArguments``, reported as every refusal of the façade is (exit 1)."""
    given = dict(click.get_current_context().meta.get(GIVEN, {}))
    since, finished = given.pop("since", None), given.pop("finished_since", None)
    if since is not None:
        given["created_after"] = now - since
    if finished is not None:
        given["finished_after"] = now - finished
    for several in ("state", "tags"):
        if several in given:
            given[several] = list(given[several])
    return Filter(**given)
