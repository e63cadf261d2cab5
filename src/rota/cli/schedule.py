"""``rota schedule edit``, ``reset`` and ``history``: a schedule's rule changed at runtime.

They call ``Rota.update_schedule``, ``reset_schedule`` and ``schedule_history``, the calls the
dashboard makes; ``connected`` records their changes under the actor ``cli``.  A wrong rule is
noticed only when a run is missed or doubled, so an edit first shows the runs the new rule
brings and asks.  What it shows was read once: if someone else changes the schedule while the
question is open, the edit is refused (``SCHEDULE_CONFLICT``) rather than overwriting a rule
the user never saw.
"""

from __future__ import annotations

from datetime import datetime
from itertools import islice
from typing import Any

import click

from rota.cli.common import connected, database_options, emit_json, fail, json_option, pairs, render
from rota.cli.control import say
from rota.cli.tables import NAME, WORDS, Column, Grid
from rota.core import schedule_edits
from rota.core.cron import Cron, zone
from rota.core.overlap import CHOICES, DEFAULT, Overlap
from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleChange,
    ScheduleSource,
    ScheduleState,
)
from rota.display import NONE, local, when

PREVIEW_RUNS = 5
HISTORY_LIMIT = 50
MAX_LIMIT = 1_000_000
LIVE = (ScheduleState.ACTIVE, ScheduleState.PAUSED)


@click.group()
def schedule() -> None:
    """Change one schedule's rule at runtime, reset it to the code's, or list its changes."""


@schedule.command()
@click.argument("name")
@click.option(
    "--cron", metavar="EXPR", help="The new cron expression (five fields, or @daily ...)."
)
@click.option("--tz", metavar="ZONE", help="The new time zone, an IANA name such as Europe/Berlin.")
@click.option(
    "--overlap",
    type=click.Choice(CHOICES),
    help="What a tick does while the previous run is unfinished: skip it, queue it, allow it.",
)
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Change it without asking.")
@database_options
def edit(
    name: str,
    cron: str | None,
    tz: str | None,
    overlap: str | None,
    assume_yes: bool,
    url: str | None,
    table_prefix: str,
) -> None:
    """Change the cron, time zone and/or overlap policy of the schedule NAME, from its first
    tick at or after now.

    Shows the next five runs under the new rule and asks before writing anything (--yes does
    not ask). For a schedule defined in code this is an override: kept across restarts until
    `rota schedule reset NAME`, or until the code's own rule changes.
    """
    if cron is None and tz is None and overlap is None:
        raise click.UsageError("give --cron, --tz, --overlap or some of them")
    with connected(url, table_prefix) as rota:
        current = rota.get_schedule(name)
        if current.state not in LIVE:
            raise fail(
                f"schedule {name!r} is {current.state.value}: only active or paused schedules "
                "can be changed"
            )
        cron = current.spec.cron if cron is None else cron
        tz = current.spec.tz if tz is None else tz
        rule = Cron(cron, tz)  # a bad expression or zone stops here: nothing asked, nothing written
        now = rota.clock.now()
        policy = current.spec.overlap if overlap is None else Overlap(overlap)
        change = schedule_edits.update(current, (cron, tz, policy), rule.first_run(now))
        if change is None:
            say(f"schedule {name!r} already runs {ruled(cron, tz, policy)}: nothing to change")
            return
        show_edit(current, change, preview(rule, now))
        if not assume_yes and not click.confirm("Change it?", default=False):
            raise fail(f"schedule {name!r} not changed")
        # At the version shown: a change made while the question was open is a conflict.
        changed = rota.update_schedule(
            name, cron=cron, tz=tz, overlap=policy.value, version=current.version
        )
    say(outcome(changed, change.action))


def preview(rule: Cron, now: datetime) -> list[datetime]:
    """The first runs of the new rule: from its first tick at or after now, where
    ``update_schedule`` starts it."""
    first = rule.first_run(now)
    return [first, *islice(rule.ticks_after(first), PREVIEW_RUNS - 1)]


def show_edit(current: Schedule, change: schedule_edits.Edit, runs: list[datetime]) -> None:
    """The rule now, the rule asked (and what it does to an override), and its next runs in
    the schedule's zone and in UTC."""
    cron, tz, overlap = change.values["cron"], change.values["tz"], change.values["overlap"]
    new = ruled(cron, tz, overlap)
    if change.action is ScheduleAction.OVERRIDDEN:
        values = change.values
        code = ruled(values["code_cron"], values["code_tz"], values["code_overlap"])
        new += f", an override: the code's {code} is kept beside it until reset"
    elif change.action is ScheduleAction.RESET:
        new += ", the code's own rule: the override ends"
    facts = [("schedule", current.name), ("rule now", rule_of(current)), ("new rule", new)]
    if current.state is ScheduleState.PAUSED:
        facts.append(("paused", "it runs from its first tick after it is resumed"))
    local_zone = zone(tz)
    columns = ["UTC"] if tz == "UTC" else [tz, "UTC"]
    runs_grid = Grid(*columns)
    for tick in runs:
        cells = [when(tick)] if tz == "UTC" else [local(tick, local_zone), when(tick)]
        runs_grid.add_row(*cells)
    render(pairs(facts), "", f"next {len(runs)} runs:", runs_grid)


def outcome(changed: Schedule, action: ScheduleAction) -> str:
    spec = changed.spec
    name, rule = changed.name, ruled(spec.cron, spec.tz, spec.overlap)
    if changed.state is ScheduleState.ACTIVE:
        start = f"next run at {when(changed.next_run_at)}"
    else:
        start = "it runs from its first tick after it is resumed"
    if action is ScheduleAction.OVERRIDDEN:
        code = ruled(*schedule_edits.code_rule(changed))
        return (
            f"schedule {name!r} overridden: {rule} instead of the code's {code}, until "
            f"`rota schedule reset`; {start}"
        )
    if action is ScheduleAction.RESET:
        return f"schedule {name!r} back to the code's rule {rule}; {start}"
    return f"schedule {name!r} updated: {rule}; {start}"


@schedule.command()
@click.argument("name")
@database_options
def reset(name: str, url: str | None, table_prefix: str) -> None:
    """End the override of the code schedule NAME: back to the rule the code gives it, from
    its first tick at or after now."""
    with connected(url, table_prefix) as rota:
        if not rota.reset_schedule(name):
            current = rota.get_schedule(name)
            if current.spec.source is ScheduleSource.CODE:
                raise fail(f"schedule {name!r} is not overridden: nothing to reset")
            raise fail(
                f"schedule {name!r} was made at runtime, not in code: it has no code rule "
                "to go back to"
            )
        changed = rota.get_schedule(name)
    say(outcome(changed, ScheduleAction.RESET))


@schedule.command()
@click.argument("name")
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=MAX_LIMIT),
    default=HISTORY_LIMIT,
    show_default=True,
    help="At most this many changes.",
)
@database_options
@json_option
def history(name: str, limit: int, url: str | None, table_prefix: str, as_json: bool) -> None:
    """List the changes of the schedule NAME, newest first: when, what, by whom (api, cli,
    dashboard:..., code), and its values before and after."""
    with connected(url, table_prefix) as rota:
        changes = rota.schedule_history(name, limit)
    if as_json:
        emit_json([change_dict(change) for change in changes])
        return
    if not changes:
        click.echo("no changes recorded")
        return
    rows = Grid(
        Column("at"),
        Column("action"),
        Column("actor", NAME),
        Column("change", WORDS, drop=1),
    )
    for change in changes:
        rows.add_row(when(change.at), change.action.value, change.actor, change_text(change))
    render(rows)


def change_text(change: ScheduleChange) -> str:
    """``cron: */5 * * * * -> */10 * * * *; tz: UTC -> Europe/Berlin`` (a value given only
    after, as when created, stands alone)."""
    old, new = change.old or {}, change.new or {}
    parts = [
        f"{key}: {value(old[key])} -> {value(new.get(key))}"
        if key in old
        else f"{key}: {value(new[key])}"
        for key in dict.fromkeys([*old, *new])
    ]
    return "; ".join(parts) or NONE


def change_dict(change: ScheduleChange) -> dict[str, Any]:
    return {
        "schedule": change.schedule,
        "at": change.at,
        "action": change.action.value,
        "actor": change.actor,
        "old": None if change.old is None else dict(change.old),
        "new": None if change.new is None else dict(change.new),
    }


def ruled(cron: str, tz: str, overlap: object = DEFAULT) -> str:
    """A rule as the CLI shows it: ``*/5 * * * * (UTC)``, and ``overlap queue`` beside it
    when the policy is not the default (``skip``)."""
    shown = f"{cron} ({tz})"
    return shown if str(overlap) == DEFAULT.value else f"{shown} overlap {overlap}"


def rule_of(schedule: Schedule) -> str:
    spec = schedule.spec
    rule = ruled(spec.cron, spec.tz, spec.overlap)
    if not schedule.overridden:
        return rule
    return f"{rule}, an override of the code's {ruled(*schedule_edits.code_rule(schedule))}"


def value(item: Any) -> str:
    return NONE if item is None else str(item)
