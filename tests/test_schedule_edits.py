"""Schedules changed at runtime, on every backend, through the public API and a fake clock:
overrides of code schedules seen by other instances and kept across restarts, reset, overrides
cleared by new code, compare-and-set edits, and the history of every change with its actor."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import (
    ConfigError,
    InvalidArguments,
    InvalidCron,
    InvalidTimezone,
    JobContext,
    Rota,
    ScheduleAction,
    ScheduleConflict,
    ScheduleNotFound,
)
from rota.testing import FakeClock
from tests.conftest import START
from tests.test_schedules import scheduled_jobs

MINUTE = timedelta(minutes=1)
EVERY_5, EVERY_10 = "*/5 * * * *", "*/10 * * * *"


def replica(make_rota: Callable[..., Rota], cron: str = EVERY_5, **options: Any) -> Rota:
    """One process of the service: its code defines the task ``report`` on ``cron``."""
    rota = make_rota(**options)

    @rota.task(cron=cron, name="report")
    def report(ctx: JobContext) -> None: ...

    return rota


def ticks(rota: Rota) -> list[timedelta]:
    return [at - START for _, at in scheduled_jobs(rota, "report")]


def test_an_override_is_seen_by_another_instance_and_survives_a_restart(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    first, second = replica(make_rota), replica(make_rota)
    first.drain()
    clock.advance(MINUTE)
    changed = first.update_schedule("report", cron=EVERY_10)
    assert (changed.spec.cron, changed.next_run_at) == (EVERY_10, START + 10 * MINUTE)
    clock.advance(4 * MINUTE)
    assert second.drain().total == 0, "the */5 tick of 00:05 is gone"
    clock.advance(5 * MINUTE)
    assert second.drain().succeeded == 1
    assert ticks(second) == [timedelta(0), 10 * MINUTE]
    restarted = replica(make_rota)
    clock.advance(5 * MINUTE)
    restarted.drain()
    assert ticks(restarted) == [timedelta(0), 10 * MINUTE], "00:15 is no tick of */10"
    shown = restarted.get_schedule("report")
    assert shown.overridden and (shown.spec.cron, shown.code_cron) == (EVERY_10, EVERY_5)
    (status,) = [s for s in restarted.jobs() if s.id == "report"]
    assert (status.cron, status.code_cron, status.code_tz) == (EVERY_10, EVERY_5, "UTC")


def test_reset_restores_the_code_rule_from_its_next_tick(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = replica(make_rota)
    rota.drain()
    rota.update_schedule("report", cron=EVERY_10)
    assert rota.reset_schedule("report") is True
    schedule = rota.get_schedule("report")
    assert not schedule.overridden and schedule.spec.cron == EVERY_5
    assert rota.reset_schedule("report") is False, "nothing left to reset"
    clock.advance(5 * MINUTE)
    rota.drain()
    assert ticks(rota) == [timedelta(0), 5 * MINUTE]


def test_an_update_to_the_code_rule_itself_ends_the_override(
    make_rota: Callable[..., Rota],
) -> None:
    rota = replica(make_rota)
    rota.drain()
    rota.update_schedule("report", tz="Europe/Paris")
    assert rota.get_schedule("report").overridden
    back = rota.update_schedule("report", tz="UTC")
    assert not back.overridden and back.code_cron is None
    assert [c.action for c in rota.schedule_history("report", limit=2)] == [
        ScheduleAction.RESET,
        ScheduleAction.OVERRIDDEN,
    ]


def test_new_code_clears_the_override_and_logs_it(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rota = replica(make_rota)
    rota.drain()
    rota.update_schedule("report", cron=EVERY_10)
    same_code = replica(make_rota)
    same_code.drain()
    assert same_code.get_schedule("report").overridden, "code unchanged: the override holds"
    clock.advance(MINUTE)
    with caplog.at_level(logging.WARNING, logger="rota"):
        deployed = replica(make_rota, cron="*/15 * * * *")
        deployed.drain()
    schedule = deployed.get_schedule("report")
    assert not schedule.overridden
    assert (schedule.spec.cron, schedule.next_run_at) == ("*/15 * * * *", START + 15 * MINUTE)
    (record,) = [r for r in caplog.records if "schedule.override_cleared" in r.getMessage()]
    assert "*/10" in record.getMessage() and "*/15" in record.getMessage()
    latest = deployed.schedule_history("report", limit=1)[0]
    assert (latest.action, latest.actor) == (ScheduleAction.OVERRIDE_CLEARED, "code")
    assert latest.old is not None and latest.old["code_cron"] == EVERY_5


def test_of_two_concurrent_edits_exactly_one_wins(
    make_rota: Callable[..., Rota], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = replica(make_rota), replica(make_rota)
    first.drain()
    both_read = threading.Barrier(2, timeout=10)
    waited: set[threading.Thread] = set()
    for instance in (first, second):
        schedules = instance.store.schedules
        read = schedules.get

        def get_then_wait(name: str, read: Any = read) -> Any:
            """Each editor's first read waits for the other's: both edit the same version."""
            found = read(name)
            thread = threading.current_thread()
            if thread is not threading.main_thread() and thread not in waited:
                waited.add(thread)
                both_read.wait()
            return found

        monkeypatch.setattr(schedules, "get", get_then_wait)
    outcomes: dict[str, object] = {}

    def edit(instance: Rota, cron: str) -> None:
        try:
            outcomes[cron] = instance.update_schedule("report", cron=cron).spec.cron
        except Exception as error:
            outcomes[cron] = error

    threads = [
        threading.Thread(target=edit, args=(first, "*/10 * * * *")),
        threading.Thread(target=edit, args=(second, "*/20 * * * *")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [cron for cron, outcome in outcomes.items() if outcome == cron]
    lost = [outcome for outcome in outcomes.values() if isinstance(outcome, ScheduleConflict)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert lost[0].code == "SCHEDULE_CONFLICT"
    assert first.get_schedule("report").spec.cron == won[0]
    edits = [c for c in first.schedule_history("report") if c.action is ScheduleAction.OVERRIDDEN]
    assert len(edits) == 1 and edits[0].new == {"cron": won[0]}


def test_the_history_records_every_kind_of_change_with_its_actor(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = replica(make_rota)
    rota.drain()
    with rota.acting_as("admin:ana"):
        rota.update_schedule("report", cron=EVERY_10)
        rota.pause("report")
    rota.resume("report")
    with rota.acting_as("cli"):
        rota.reset_schedule("report")
    rota.schedule("0 3 * * *", "report", name="nightly")
    rota.schedule("0 4 * * *", "report", name="nightly")
    rota.cancel("nightly")
    replica(make_rota, cron="*/15 * * * *").drain()
    without = make_rota()
    without.drain()  # the code no longer defines it
    seen = [(c.action.value, c.actor) for c in reversed(rota.schedule_history("report"))]
    assert seen == [
        ("created", "code"),
        ("overridden", "admin:ana"),
        ("paused", "admin:ana"),
        ("resumed", "api"),
        ("reset", "cli"),
        ("updated", "code"),
        ("disabled", "code"),
    ]
    nightly = [(c.action.value, c.old, c.new) for c in reversed(rota.schedule_history("nightly"))]
    assert [entry[0] for entry in nightly] == ["created", "updated", "cancelled"]
    assert nightly[1][1:] == ({"cron": "0 3 * * *"}, {"cron": "0 4 * * *"})
    assert nightly[2][1:] == ({"state": "active"}, {"state": "cancelled"})
    (latest,) = rota.schedule_history("report", limit=1)
    assert latest.at == START and latest.new == {"state": "disabled"}


def test_an_override_cleared_by_code_is_in_the_history(
    make_rota: Callable[..., Rota],
) -> None:
    rota = replica(make_rota)
    rota.drain()
    rota.update_schedule("report", cron=EVERY_10)
    replica(make_rota, cron="*/15 * * * *").drain()
    actions = [c.action for c in rota.schedule_history("report")]
    assert actions == [
        ScheduleAction.OVERRIDE_CLEARED,
        ScheduleAction.OVERRIDDEN,
        ScheduleAction.CREATED,
    ]


def test_bad_edits_are_refused_with_typed_errors_and_write_nothing(
    make_rota: Callable[..., Rota],
) -> None:
    rota = replica(make_rota)
    rota.drain()
    before = rota.get_schedule("report")
    with pytest.raises(InvalidCron):
        rota.update_schedule("report", cron="*/5 * * * * *")
    with pytest.raises(InvalidTimezone):
        rota.update_schedule("report", tz="Mars/Olympus")
    with pytest.raises(InvalidArguments):
        rota.update_schedule("report")
    with pytest.raises(ScheduleNotFound):
        rota.update_schedule("missing", cron=EVERY_10)
    with pytest.raises(ScheduleNotFound):
        rota.schedule_history("missing")
    with pytest.raises(ScheduleNotFound):
        rota.reset_schedule("\x00")
    assert rota.get_schedule("report") == before
    assert len(rota.schedule_history("report")) == 1
    with pytest.raises(ScheduleConflict):
        rota.update_schedule("report", cron=EVERY_10, version=before.version + 1)
    with pytest.raises(ScheduleConflict):
        rota.reset_schedule("report", version=before.version + 1)
    with pytest.raises(InvalidArguments):
        rota.update_schedule("report", cron=EVERY_10, version=-1)
    rota.cancel("report")
    with pytest.raises(ConfigError, match="cancelled"):
        rota.update_schedule("report", cron=EVERY_10)
    with pytest.raises(ConfigError, match="cancelled: it cannot run now"):
        rota.run_now("report")
    assert len(rota.schedule_history("report")) == 2, "created, cancelled: nothing else"
    with pytest.raises(InvalidArguments), rota.acting_as(""):
        pass


def test_an_unchanged_rule_writes_nothing(make_rota: Callable[..., Rota]) -> None:
    rota = replica(make_rota)
    rota.drain()
    same = rota.update_schedule("report", cron=EVERY_5, tz="UTC")
    assert not same.overridden and same.version == rota.get_schedule("report").version
    assert len(rota.schedule_history("report")) == 1


def test_prune_removes_history_older_than_the_failed_jobs_retention(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = replica(make_rota, failed_retention=timedelta(days=1))
    rota.drain()
    clock.advance(timedelta(days=2))
    rota.pause("report")
    rota.prune()
    assert [c.action for c in rota.schedule_history("report")] == [ScheduleAction.PAUSED]


def test_the_history_lists_only_what_a_change_changed(make_rota: Callable[..., Rota]) -> None:
    rota = replica(make_rota)
    rota.drain()
    rota.update_schedule("report", cron=EVERY_10)
    rota.update_schedule("report", tz="Asia/Tokyo")
    rota.update_schedule("report", cron=EVERY_5, tz="UTC")  # the code's rule: a reset
    rota.update_schedule("report", cron=EVERY_10, tz="Asia/Tokyo")
    rota.reset_schedule("report")
    rota.update_schedule("report", tz="Asia/Tokyo")
    rota.reset_schedule("report")
    changes = [(c.action.value, c.old, c.new) for c in reversed(rota.schedule_history("report"))]
    assert changes[1:] == [
        ("overridden", {"cron": EVERY_5}, {"cron": EVERY_10}),
        ("overridden", {"tz": "UTC"}, {"tz": "Asia/Tokyo"}),
        ("reset", {"cron": EVERY_10, "tz": "Asia/Tokyo"}, {"cron": EVERY_5, "tz": "UTC"}),
        ("overridden", {"cron": EVERY_5, "tz": "UTC"}, {"cron": EVERY_10, "tz": "Asia/Tokyo"}),
        ("reset", {"cron": EVERY_10, "tz": "Asia/Tokyo"}, {"cron": EVERY_5, "tz": "UTC"}),
        ("overridden", {"tz": "UTC"}, {"tz": "Asia/Tokyo"}),
        ("reset", {"tz": "Asia/Tokyo"}, {"tz": "UTC"}),
    ]
