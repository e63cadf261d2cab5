"""A declarative schedules file (``rota schedules apply``): what it may say, and the changes
that make the database's schedules match it.

The file is TOML, one table per schedule name::

    [nightly-cleanup]
    cron = "0 4 * * *"       # each key optional
    tz = "Europe/Berlin"
    overlap = "queue"
    enabled = false          # pause (true: resume)

It declares the **overrides**.  For a schedule defined in code, a key left out means the
code's own value, so a table that names only ``enabled`` also ends any override of the rule;
for a schedule made at runtime (``Rota.schedule()``, which has no code value) a key left out
keeps what the schedule has.  ``enabled`` left out leaves the schedule paused or active as it
is: pausing is an operator's act, which a file applied later must not undo unasked.  With
``prune``, every overridden code schedule the file does not name goes back to its code's rule;
runtime schedules it does not name, and every schedule's state, are left alone; nothing is
ever deleted.

Parsing and planning are pure and check everything before anything is written: every problem
of the file is gathered into one ``ConfigError``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rota.core.cron import Cron, zone
from rota.core.names import name_problem
from rota.core.overlap import Overlap, overlap_policy
from rota.core.schedule_edits import Rule, code_rule, rule_of
from rota.core.schedules import Schedule, ScheduleSource, ScheduleState
from rota.errors import ConfigError, RotaError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

KEYS = ("cron", "tz", "overlap", "enabled")
LIVE = (ScheduleState.ACTIVE, ScheduleState.PAUSED)


@dataclass(frozen=True, slots=True)
class Declared:
    """One table of the file; ``None`` for a key it leaves out."""

    name: str
    cron: str | None = None
    tz: str | None = None
    overlap: Overlap | None = None
    enabled: bool | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """What one schedule needs: its rule set to ``rule`` (``None``: unchanged), then paused
    (``enabled=False``) or resumed (``True``); ``version`` is the one planned from, so that a
    change made meanwhile is a conflict; ``lines`` say it, one per change."""

    name: str
    version: int
    rule: Rule | None
    enabled: bool | None
    lines: tuple[str, ...]


class ScheduleFileError(ConfigError):
    """A file that cannot be applied; its message lists every problem found, one a line."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


def parse(text: str) -> list[Declared]:
    """The tables of the file, in its order; ``ScheduleFileError`` naming every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScheduleFileError([f"not valid TOML: {error}"]) from error
    problems: list[str] = []
    declared = [_table(name, table, problems) for name, table in data.items()]
    if problems:
        raise ScheduleFileError(problems)
    return [entry for entry in declared if entry is not None]


def _table(name: str, table: Any, problems: list[str]) -> Declared | None:
    where = f"[{name}]"
    problem = name_problem("schedule", name)
    if problem is not None:
        problems.append(f"{where}: {problem}")
        return None
    if not isinstance(table, dict):
        problems.append(f"{name!r} must be a table ([{name}]) of {', '.join(KEYS)}")
        return None
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        problems.append(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(KEYS)})")
    values: dict[str, Any] = {}
    for key in ("cron", "tz"):
        if key in table and not isinstance(table[key], str):
            problems.append(f"{where}: {key} must be a string, not {table[key]!r}")
        elif key in table:
            values[key] = table[key]
    if "enabled" in table and not isinstance(table["enabled"], bool):
        problems.append(f"{where}: enabled must be true or false, not {table['enabled']!r}")
    elif "enabled" in table:
        values["enabled"] = table["enabled"]
    if "overlap" in table:
        try:
            values["overlap"] = overlap_policy(table["overlap"], ConfigError)
        except ConfigError as error:
            problems.append(f"{where}: {error}")
    try:
        if "tz" in values:
            zone(values["tz"])
    except RotaError as error:
        problems.append(f"{where}: {error}")
    try:
        if "cron" in values:
            Cron(values["cron"], "UTC")
    except RotaError as error:
        problems.append(f"{where}: {error}")
    return Declared(name, **values)


def plan(declared: Sequence[Declared], schedules: Sequence[Schedule], prune: bool) -> list[Step]:
    """The steps that make ``schedules`` (every schedule of the database) match the file, by
    schedule name; none for a schedule that already does.  ``ScheduleFileError`` naming every
    table whose schedule does not exist or has ended (disabled or cancelled)."""
    found = {schedule.name: schedule for schedule in schedules}
    problems: list[str] = []
    steps: list[Step] = []
    for entry in declared:
        schedule = found.get(entry.name)
        if schedule is None:
            problems.append(f"[{entry.name}]: no schedule of that name in the database")
        elif schedule.state not in LIVE:
            problems.append(f"[{entry.name}]: the schedule is {schedule.state}: it cannot change")
        else:
            steps.append(_step(schedule, entry))
    if problems:
        raise ScheduleFileError(problems)
    if prune:
        named = {entry.name for entry in declared}
        steps.extend(
            _step(schedule, Declared(schedule.name))
            for schedule in schedules
            if schedule.name not in named
            and schedule.overridden
            and schedule.state in LIVE
            and schedule.spec.source is ScheduleSource.CODE
        )
    return [step for step in steps if step.lines]


def _step(schedule: Schedule, entry: Declared) -> Step:
    base = code_rule(schedule) if schedule.spec.source is ScheduleSource.CODE else None
    current = rule_of(schedule.spec)
    start = base or current
    wanted: Rule = (
        start[0] if entry.cron is None else entry.cron,
        start[1] if entry.tz is None else entry.tz,
        start[2] if entry.overlap is None else entry.overlap,
    )
    lines = [
        f"{schedule.name}: {key} {before} -> {after}{_kind(wanted, base)}"
        for key, before, after in zip(("cron", "tz", "overlap"), current, wanted, strict=True)
        if before != after
    ]
    enabled = None
    paused = schedule.state is ScheduleState.PAUSED
    if entry.enabled is not None and entry.enabled == paused:
        enabled = entry.enabled
        lines.append(f"{schedule.name}: {'resume' if entry.enabled else 'pause'}")
    rule = wanted if wanted != current else None
    return Step(schedule.name, schedule.version, rule, enabled, tuple(lines))


def _kind(wanted: Rule, code: Rule | None) -> str:
    """What a rule change is to a code schedule: an override, or back to the code's rule."""
    if code is None:
        return ""
    return " (the code's)" if wanted == code else " (override)"
