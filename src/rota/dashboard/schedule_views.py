"""What a schedule's page shows: its rule (and the code's, while overridden), the edit form with
a preview of the next runs, and its history of changes.

Like ``rota.dashboard.views``, these are plain dicts built from the ``Rota`` façade only, so the
page says what ``rota schedule history`` says.  The preview is computed by ``core.cron``, the
code that ``update_schedule`` validates with and the scheduler fires by, so a rule the preview
accepts is one saving accepts, and the runs it lists are the ones the schedule will have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import islice
from typing import Any

from rota.app import Rota
from rota.core import schedule_edits
from rota.core.cron import Cron, zone
from rota.core.overlap import Overlap
from rota.core.schedules import Schedule, ScheduleAction, ScheduleChange, ScheduleState
from rota.dashboard.views import NEXT_RUNS, describe, whole_number
from rota.display import NONE, local, when
from rota.errors import InvalidCron, InvalidTimezone

HISTORY_SHOWN = 50
"""The newest changes a page lists; ``rota schedule history`` lists them all."""
LIVE = (ScheduleState.ACTIVE, ScheduleState.PAUSED)
"""The states ``update_schedule`` and ``reset_schedule`` act on."""
RULE_CHANGES = (
    ScheduleAction.CREATED,
    ScheduleAction.UPDATED,
    ScheduleAction.OVERRIDDEN,
    ScheduleAction.RESET,
    ScheduleAction.OVERRIDE_CLEARED,
)
"""The changes that give a schedule a new version (pausing and resuming leave the rule as it
is, so a form loaded before either still edits the rule it showed)."""


@dataclass(frozen=True)
class EditForm:
    """The edit form as submitted: the rule asked for and the version it was loaded at."""

    cron: str
    tz: str
    version: int | None

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> EditForm:
        """An empty zone is UTC, every schedule's default; a missing or garbled version is
        ``None``, which no schedule has, so such a form is refused as stale."""
        cron, tz = fields.get("cron", "").strip(), fields.get("tz", "").strip()
        return cls(cron, tz or "UTC", whole_number(fields.get("version", "")))


def both_zones(moment: datetime, tz: str) -> dict[str, str]:
    """``moment`` in the schedule's zone and in UTC, to the minute (cron's resolution); a zone
    this host no longer knows (its tzdata changed) shows no local time rather than no page."""
    try:
        there = local(moment, zone(tz))
    except InvalidTimezone:
        there = NONE
    return {"local": there, "utc": local(moment, timezone.utc)}


def preview(cron: str, tz: str, now: datetime) -> dict[str, Any]:
    """The runs a schedule with this rule would have from ``now`` (a changed schedule starts at
    its first tick at or after the change), or the error that saving the rule would give."""
    try:
        rule = Cron(cron, tz)
        first = rule.first_run(now)
        ticks = [first, *islice(rule.ticks_after(first), NEXT_RUNS - 1)]
    except (InvalidCron, InvalidTimezone) as error:
        field = "tz" if isinstance(error, InvalidTimezone) else "cron"
        return {"cron": cron, "tz": tz, "error": str(error), "invalid": field, "runs": []}
    try:
        description = rule.describe()
    except ValueError:
        description = ""
    return {
        "cron": cron,
        "tz": tz,
        "error": None,
        "invalid": None,
        "runs": [both_zones(tick, tz) for tick in ticks],
        "description": description,
    }


OVERLAP_MEANING = {
    Overlap.SKIP: "a tick is skipped while the previous run is unfinished",
    Overlap.QUEUE: "a tick waits for the previous run to end",
    Overlap.ALLOW: "a tick runs even beside the previous run",
}


def overlap_facts(schedule: Schedule) -> dict[str, str | None]:
    """The policy in force, what it does, and the code's while an override changed it."""
    policy = schedule.spec.overlap
    code = schedule_edits.code_rule(schedule)[2] if schedule.overridden else policy
    return {
        "policy": policy.value,
        "meaning": OVERLAP_MEANING[policy],
        "code": code.value if code is not policy else None,
    }


def shown(value: object) -> str:
    return NONE if value is None else str(value)


def differences(change: ScheduleChange) -> list[dict[str, str | None]]:
    """What one history entry changed, field by field: ``old`` is ``None`` for a field that
    had no value before (a creation lists only its new values).  An edit recorded by an older
    rota holds the whole rule, cron and zone; the one it left as it was is not a change, and is
    not listed."""
    old, new = change.old or {}, change.new or {}
    return [
        {
            "field": key,
            "old": shown(old[key]) if key in old else None,
            "new": shown(new.get(key)),
        }
        for key in dict.fromkeys([*old, *new])
        if key not in old or key not in new or old[key] != new[key]
    ]


def history_rows(changes: Sequence[ScheduleChange]) -> list[dict[str, Any]]:
    return [
        {
            "at": change.at,
            "action": change.action.value,
            "actor": change.actor,
            "changes": differences(change),
        }
        for change in changes
    ]


def conflict(schedule: Schedule, history: Sequence[ScheduleChange], seen: int | None) -> str:
    """Why a form loaded at version ``seen`` was not saved: the rule changed meanwhile, to what,
    by whom and when."""
    if seen is None:
        return (
            "Not saved: the form does not say which version of the schedule it was loaded "
            "from. Reload the page and make the change again."
        )
    latest = next((change for change in history if change.action in RULE_CHANGES), None)
    by = f" by {latest.actor} at {when(latest.at)} ({latest.action.value})" if latest else ""
    return (
        f"Not saved: schedule {schedule.name!r} was changed{by} after this page was loaded "
        f"(version {seen}, now {schedule.version}). It now runs {schedule.spec.cron!r} in "
        f"{schedule.spec.tz}. Saving the form again replaces that rule with the values in it."
    )


def schedule_page(
    rota: Rota,
    name: str,
    form: EditForm | None = None,
    problem: str | None = None,
    stale: bool = False,
) -> dict[str, Any]:
    """One schedule, its edit form (holding ``form`` when a submitted one is shown again, with
    ``problem`` saying why it was not saved, or the conflict when it was ``stale``) and its
    history.  ``ScheduleNotFound`` propagates as a 404."""
    schedule = rota.get_schedule(name)
    history = rota.schedule_history(name, limit=HISTORY_SHOWN + 1)
    now = rota.clock.now()
    live, active = schedule.state in LIVE, schedule.state is ScheduleState.ACTIVE
    cron = schedule.spec.cron if form is None else form.cron
    tz = schedule.spec.tz if form is None else form.tz
    return {
        "schedule": schedule,
        "description": describe(schedule),
        "overlap": overlap_facts(schedule),
        "next_run": both_zones(schedule.next_run_at, schedule.spec.tz) if active else None,
        "last_run": schedule.last_run_at,
        "editable": live,
        "can_pause": active,
        "can_resume": schedule.state is ScheduleState.PAUSED,
        "can_run": live,
        "can_reset": live and schedule.overridden,
        "form": {"cron": cron, "tz": tz},
        "preview": preview(cron, tz, now) if live else None,
        "problem": problem,
        "conflict": conflict(schedule, history, form.version) if stale and form else None,
        "history": history_rows(history[:HISTORY_SHOWN]),
        "more_history": len(history) > HISTORY_SHOWN,
    }
