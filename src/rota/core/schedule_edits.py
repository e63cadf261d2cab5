"""What a change of a schedule writes, decided from the schedule as read and the change asked.

Three sources change a schedule's rule: code (synced at start), ``Rota.schedule()`` (a runtime
schedule) and ``Rota.update_schedule()`` (an override, when code defines the schedule).  The
rule in force is always in ``cron``/``tz``, so the scheduler never asks where it came from;
while overridden, ``code_cron``/``code_tz`` keep the code's rule, and code that changes that
rule clears the override.  Every function returns an ``Edit`` (the columns to write and the
history entry's old and new values) or ``None`` when nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.core.overlap import DEFAULT, Overlap
from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
)

DEFINITION = ("task", "cron", "tz", "payload", "queue", "priority", "source", "overlap")
"""The columns code or ``Rota.schedule()`` owns; the rest is run state."""


@dataclass(frozen=True)
class Edit:
    action: ScheduleAction
    values: dict[str, Any]
    """Columns to write (``next_run_at`` included when the schedule starts again)."""
    old: dict[str, Any] = field(default_factory=dict)
    new: dict[str, Any] = field(default_factory=dict)


def definition(spec: ScheduleSpec) -> dict[str, Any]:
    return {
        "task": spec.task,
        "cron": spec.cron,
        "tz": spec.tz,
        "payload": spec.payload,
        "queue": spec.queue,
        "priority": spec.priority,
        "source": spec.source.value,
        "overlap": spec.overlap.value,
    }


Rule = tuple[str, str, Overlap]
"""What an override changes: cron, time zone and overlap policy."""
RULE = ("cron", "tz", "overlap")
CLEARED = {"code_cron": None, "code_tz": None, "code_overlap": None}


def rule_of(spec: ScheduleSpec) -> Rule:
    return (spec.cron, spec.tz, spec.overlap)


def code_rule(schedule: Schedule) -> Rule:
    """The code's rule: the one in force unless overridden (an override made before overlap
    policies existed kept no ``code_overlap``: the default)."""
    if not schedule.overridden:
        return rule_of(schedule.spec)
    assert schedule.code_cron is not None and schedule.code_tz is not None
    return (schedule.code_cron, schedule.code_tz, schedule.code_overlap or DEFAULT)


def _columns(rule: Rule, prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{key}": str(value) for key, value in zip(RULE, rule, strict=True)}


def created(spec: ScheduleSpec) -> dict[str, Any]:
    """The history's ``new`` value of a schedule just created: its definition, arguments aside."""
    return {key: value for key, value in definition(spec).items() if key != "payload"}


def sync(current: Schedule, spec: ScheduleSpec, first_run: datetime) -> Edit | None:
    """Bring ``current`` to the definition ``spec`` (code at start, or ``Rota.schedule()``).

    A changed cron or time zone, or a disabled schedule coming back, starts again at
    ``first_run``.  An override survives code that still says what it said when the override
    was made; code that says something else clears it (``override_cleared``)."""
    wanted = definition(spec)
    present = definition(current.spec)
    cleared = False
    if current.overridden and spec.source is ScheduleSource.CODE:
        if rule_of(spec) == code_rule(current):
            wanted.update({key: present[key] for key in RULE})
        else:
            cleared = True
    changed = {key: value for key, value in wanted.items() if present[key] != value}
    old = {key: present[key] for key in changed}
    values: dict[str, Any] = dict(changed)
    restart = "cron" in changed or "tz" in changed
    if current.state is ScheduleState.DISABLED:
        values["state"] = ScheduleState.ACTIVE.value
        old["state"], changed["state"] = current.state.value, ScheduleState.ACTIVE.value
        restart = True
    if cleared:
        values.update(CLEARED)
        old.update(_columns(code_rule(current), "code_"))
    if not values:
        return None
    if restart:
        values["next_run_at"] = first_run
    action = ScheduleAction.OVERRIDE_CLEARED if cleared else ScheduleAction.UPDATED
    return Edit(action, values, _shown(old), _shown(changed))


def update(schedule: Schedule, rule: Rule, first_run: datetime) -> Edit | None:
    """Change the rule of a live schedule at runtime: an override of a code schedule (ending it
    when the rule asked is the code's own), an update of a runtime one.  ``first_run`` is the
    new rule's next run, taken only when its cron or time zone changes."""
    return _edit(schedule, rule, first_run, forced_reset=False)


def reset(schedule: Schedule, first_run: datetime) -> Edit | None:
    """Back to the code's rule, starting at ``first_run`` (computed from that rule) when its
    cron or time zone differs from the override's."""
    if not schedule.overridden:
        return None
    return _edit(schedule, code_rule(schedule), first_run, forced_reset=True)


def _edit(schedule: Schedule, rule: Rule, first_run: datetime, forced_reset: bool) -> Edit | None:
    current = rule_of(schedule.spec)
    if rule == current and not forced_reset:
        return None
    values: dict[str, Any] = _columns(rule)
    if rule[:2] != current[:2]:
        values["next_run_at"] = first_run
    old, new = rule_change(current, rule)
    if schedule.spec.source is not ScheduleSource.CODE:
        return Edit(ScheduleAction.UPDATED, values, old, new)
    if rule == code_rule(schedule):
        return Edit(ScheduleAction.RESET, {**values, **CLEARED}, old, new)
    values.update(_columns(code_rule(schedule), "code_"))
    return Edit(ScheduleAction.OVERRIDDEN, values, old, new)


def rule_change(
    old: Sequence[object], new: Sequence[object]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The history's old and new values of a changed rule: the fields that changed only (a
    ``tz: UTC -> UTC`` beside a new cron is no change)."""
    changed = [
        (key, before, after)
        for key, before, after in zip(RULE, old, new, strict=False)
        if before != after
    ]
    return (
        {key: _plain(before) for key, before, _ in changed},
        {key: _plain(after) for key, _, after in changed},
    )


def _plain(value: object) -> object:
    return str(value) if isinstance(value, Overlap) else value


def _shown(values: dict[str, Any]) -> dict[str, Any]:
    """History keeps what changed, except the arguments themselves (only that they did)."""
    return {key: ("changed" if key == "payload" else value) for key, value in values.items()}
