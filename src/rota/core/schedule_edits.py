"""What a change of a schedule writes, decided from the schedule as read and the change asked.

Three sources change a schedule's rule: code (synced at start), ``Rota.schedule()`` (a runtime
schedule) and ``Rota.update_schedule()`` (an override, when code defines the schedule).  The
rule in force is always in ``cron``/``tz``, so the scheduler never asks where it came from;
while overridden, ``code_cron``/``code_tz`` keep the code's rule, and code that changes that
rule clears the override.  Every function returns an ``Edit`` (the columns to write and the
history entry's old and new values) or ``None`` when nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
)

DEFINITION = ("task", "cron", "tz", "payload", "queue", "priority", "source")
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
    }


def created(spec: ScheduleSpec) -> dict[str, Any]:
    """The history's ``new`` value of a schedule just created: its definition, arguments aside."""
    return {key: value for key, value in definition(spec).items() if key != "payload"}


def sync(current: Schedule, spec: ScheduleSpec, first_run: datetime) -> Edit | None:
    """Bring ``current`` to the definition ``spec`` (code at start, or ``Rota.schedule()``).

    A changed rule, or a disabled schedule coming back, starts again at ``first_run``.  An
    override survives code that still says what it said when the override was made; code that
    says something else clears it (``override_cleared``)."""
    wanted = definition(spec)
    present = definition(current.spec)
    cleared = False
    if current.overridden and spec.source is ScheduleSource.CODE:
        if (spec.cron, spec.tz) == (current.code_cron, current.code_tz):
            wanted["cron"], wanted["tz"] = present["cron"], present["tz"]
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
        values.update(code_cron=None, code_tz=None)
        old.update(code_cron=current.code_cron, code_tz=current.code_tz)
    if not values:
        return None
    if restart:
        values["next_run_at"] = first_run
    action = ScheduleAction.OVERRIDE_CLEARED if cleared else ScheduleAction.UPDATED
    return Edit(action, values, _shown(old), _shown(changed))


def update(schedule: Schedule, cron: str, tz: str, first_run: datetime) -> Edit | None:
    """Change the rule of a live schedule at runtime: an override of a code schedule (ending it
    when the rule asked is the code's own), an update of a runtime one."""
    spec = schedule.spec
    if (cron, tz) == (spec.cron, spec.tz):
        return None
    values: dict[str, Any] = {"cron": cron, "tz": tz, "next_run_at": first_run}
    old, new = rule_change((spec.cron, spec.tz), (cron, tz))
    if spec.source is not ScheduleSource.CODE:
        return Edit(ScheduleAction.UPDATED, values, old, new)
    code = (schedule.code_cron, schedule.code_tz) if schedule.overridden else (spec.cron, spec.tz)
    if (cron, tz) == code:
        return Edit(ScheduleAction.RESET, {**values, "code_cron": None, "code_tz": None}, old, new)
    values.update(code_cron=code[0], code_tz=code[1])
    return Edit(ScheduleAction.OVERRIDDEN, values, old, new)


def reset(schedule: Schedule, first_run: datetime) -> Edit | None:
    """Back to the code's rule, starting at ``first_run`` (computed from that rule)."""
    if not schedule.overridden:
        return None
    spec = schedule.spec
    values = {
        "cron": schedule.code_cron,
        "tz": schedule.code_tz,
        "code_cron": None,
        "code_tz": None,
        "next_run_at": first_run,
    }
    old, new = rule_change((spec.cron, spec.tz), (schedule.code_cron, schedule.code_tz))
    return Edit(ScheduleAction.RESET, values, old, new)


def rule_change(
    old: tuple[str | None, str | None], new: tuple[str | None, str | None]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The history's old and new values of a changed rule: the fields that changed only (a
    ``tz: UTC -> UTC`` beside a new cron is no change)."""
    changed = [
        (key, before, after)
        for key, before, after in zip(("cron", "tz"), old, new, strict=True)
        if before != after
    ]
    return {key: before for key, before, _ in changed}, {key: after for key, _, after in changed}


def _shown(values: dict[str, Any]) -> dict[str, Any]:
    """History keeps what changed, except the arguments themselves (only that they did)."""
    return {key: ("changed" if key == "payload" else value) for key, value in values.items()}
