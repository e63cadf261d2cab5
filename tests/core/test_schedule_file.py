"""The schedules file, pure: what parses, and the steps planned against schedules as read."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rota.core.overlap import Overlap
from rota.core.schedule_file import Declared, ScheduleFileError, parse, plan
from rota.core.schedules import Schedule, ScheduleSource, ScheduleSpec, ScheduleState

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def schedule(
    name: str,
    source: ScheduleSource = ScheduleSource.CODE,
    state: ScheduleState = ScheduleState.ACTIVE,
    cron: str = "*/5 * * * *",
    code_cron: str | None = None,
) -> Schedule:
    spec = ScheduleSpec(name, name, cron, "UTC", "{}", "default", 0, source)
    code_tz = "UTC" if code_cron else None
    code_overlap = Overlap.SKIP if code_cron else None
    return Schedule(spec, state, T0, None, T0, T0, code_cron, code_tz, code_overlap, version=3)


def test_parse_keeps_the_files_order_and_leaves_out_what_it_does_not_say() -> None:
    text = '[b]\noverlap = "queue"\n["a.b"]\ncron = "@daily"\ntz = "Asia/Tokyo"\nenabled = false\n'
    assert parse(text) == [
        Declared("b", overlap=Overlap.QUEUE),
        Declared("a.b", cron="@daily", tz="Asia/Tokyo", enabled=False),
    ]
    assert parse("") == []


def test_parse_gathers_every_problem() -> None:
    with pytest.raises(ScheduleFileError) as raised:
        parse('[a]\nx = 1\n[b]\ncron = "* *"\n[" c"]\n')
    assert len(raised.value.problems) == 3
    assert raised.value.code == "CONFIG_ERROR"


def test_plan_steps_only_what_differs_at_the_version_read() -> None:
    current = [schedule("a"), schedule("b", code_cron="0 * * * *", cron="*/7 * * * *")]
    matching = [Declared("a", enabled=True), Declared("b", cron="*/7 * * * *")]
    assert plan(matching, current, prune=True) == [], "the override is in the file: kept"
    (pause,) = plan([Declared("a", enabled=False)], current, False)
    assert (pause.rule, pause.enabled, pause.lines) == (None, False, ("a: pause",))
    (reset,) = plan([], current, prune=True)
    assert (reset.name, reset.version, reset.rule) == ("b", 3, ("0 * * * *", "UTC", Overlap.SKIP))


def test_plan_refuses_unknown_and_ended_schedules_together() -> None:
    ended = schedule("gone", state=ScheduleState.DISABLED)
    with pytest.raises(ScheduleFileError) as raised:
        plan([Declared("missing"), Declared("gone")], [ended], False)
    assert raised.value.problems == (
        "[missing]: no schedule of that name in the database",
        "[gone]: the schedule is disabled: it cannot change",
    )
