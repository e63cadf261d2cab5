"""The ScheduleStore contract: upsert by name, due and next, firing each tick exactly once (a
batch at a time), pause/resume/cancel/disable, and the statistics read from the jobs table."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta

from rota.core.model import NewJob
from rota.core.schedules import Schedule, ScheduleSource, ScheduleSpec, ScheduleState, ScheduleStats
from rota.core.transitions import VerdictKind
from rota.store import ScheduleStore, Store
from tests.conftest import START
from tests.store.contract.support import EMPTY, claimed, new, outcome

MINUTE = timedelta(minutes=1)
ACTIVE, PAUSED = ScheduleState.ACTIVE, ScheduleState.PAUSED
DISABLED, CANCELLED = ScheduleState.DISABLED, ScheduleState.CANCELLED


def spec(name: str = "nightly", cron: str = "0 3 * * *", tz: str = "UTC") -> ScheduleSpec:
    return ScheduleSpec(
        name=name,
        task="t",
        cron=cron,
        tz=tz,
        payload=EMPTY,
        queue="default",
        priority=0,
        source=ScheduleSource.CODE,
    )


def upsert(
    schedules: ScheduleStore, definition: ScheduleSpec, first_run: datetime, now: datetime
) -> Schedule:
    """Upsert as code does at start; the schedule as it now is."""
    schedule, _ = schedules.upsert(definition, first_run, now, "code")
    assert schedule is not None, "the row is readable"
    return schedule


def tick(at: datetime = START, name: str = "nightly") -> list[NewJob]:
    """The job of one tick, as the scheduler builds it."""
    return [new(schedule=name, scheduled_at=at)]


def test_upsert_creates_by_name_and_never_a_second_row(schedules: ScheduleStore) -> None:
    created = upsert(schedules, spec(), START + MINUTE, START)
    assert (created.name, created.state, created.next_run_at) == ("nightly", ACTIVE, START + MINUTE)
    again = upsert(schedules, spec(), START + 5 * MINUTE, START + MINUTE)
    assert again == created, "an unchanged definition changes nothing, its next run included"
    assert [s.name for s in schedules.all()] == ["nightly"]
    assert schedules.get("nightly") == created
    assert schedules.get("missing") is None


def test_upsert_many_creates_updates_and_leaves_alone_as_upsert_does(
    schedules: ScheduleStore,
) -> None:
    first = [(spec(name), START + MINUTE) for name in ("a", "b", "c")]
    assert schedules.upsert_many(first, START, "code") == {}
    assert [s.name for s in schedules.all()] == ["a", "b", "c"]
    assert schedules.upsert_many(first, START + MINUTE, "code") == {}, "unchanged"
    changed = [(spec("b", cron="0 4 * * *"), START + 2 * MINUTE), (spec("d"), START + MINUTE)]
    edits = schedules.upsert_many(changed, START + MINUTE, "code")
    assert list(edits) == ["b"] and edits["b"].new["cron"] == "0 4 * * *"
    b = schedules.get("b")
    assert b is not None and (b.spec.cron, b.next_run_at) == ("0 4 * * *", START + 2 * MINUTE)
    assert [s.name for s in schedules.all()] == ["a", "b", "c", "d"]
    assert [c.action.value for c in schedules.history_of("b")] == ["updated", "created"]


def test_a_changed_cron_or_zone_restarts_at_the_first_run_given(schedules: ScheduleStore) -> None:
    upsert(schedules, spec(), START + MINUTE, START)
    changed = upsert(schedules, spec(cron="0 4 * * *"), START + 2 * MINUTE, START)
    assert (changed.spec.cron, changed.next_run_at) == ("0 4 * * *", START + 2 * MINUTE)
    zoned = upsert(schedules, spec(cron="0 4 * * *", tz="Asia/Shanghai"), START + 3 * MINUTE, START)
    assert (zoned.spec.tz, zoned.next_run_at) == ("Asia/Shanghai", START + 3 * MINUTE)


def test_upsert_keeps_paused_and_cancelled_but_brings_back_disabled(
    schedules: ScheduleStore,
) -> None:
    for name in ("paused", "cancelled", "disabled"):
        upsert(schedules, spec(name), START + MINUTE, START)
    schedules.set_state("paused", PAUSED, (ACTIVE,), START, "test")
    schedules.set_state("cancelled", CANCELLED, (ACTIVE,), START, "test")
    assert schedules.disable(["disabled"], START) == 1
    back = {
        name: upsert(schedules, spec(name), START + 9 * MINUTE, START)
        for name in ("paused", "cancelled", "disabled")
    }
    assert {name: s.state for name, s in back.items()} == {
        "paused": PAUSED,
        "cancelled": CANCELLED,
        "disabled": ACTIVE,
    }
    assert back["disabled"].next_run_at == START + 9 * MINUTE


def offered(schedules: ScheduleStore, now: datetime, limit: int) -> list[str]:
    """The schedules ``fire_due`` takes and asks a plan for, in order, leaving each as it is."""
    asked: list[str] = []

    def planner(schedule: Schedule) -> None:
        asked.append(schedule.name)

    firings = schedules.fire_due(now, limit, planner)
    assert (firings.taken, firings.fired) == (len(asked), [])
    return asked


def test_fire_due_takes_active_schedules_whose_time_came_earliest_first(
    schedules: ScheduleStore,
) -> None:
    upsert(schedules, spec("late"), START, START)
    upsert(schedules, spec("early"), START - MINUTE, START)
    upsert(schedules, spec("future"), START + MINUTE, START)
    upsert(schedules, spec("paused"), START - 2 * MINUTE, START)
    schedules.set_state("paused", PAUSED, (ACTIVE,), START, "test")
    assert offered(schedules, START, 10) == ["early", "late"]
    assert offered(schedules, START, 1) == ["early"]
    assert schedules.next_due() == START - MINUTE
    assert [s.name for s in schedules.all((PAUSED,))] == ["paused"]
    assert [s.name for s in schedules.all()] == ["early", "future", "late", "paused"]


def test_fire_enqueues_the_tick_and_advances_once(store: Store, schedules: ScheduleStore) -> None:
    schedule = upsert(schedules, spec(), START, START)
    assert schedules.fire(schedule, START + MINUTE, tick(), START)
    fired = schedules.get("nightly")
    assert fired is not None and (fired.next_run_at, fired.last_run_at) == (START + MINUTE, START)
    assert schedules.fire(schedule, START + MINUTE, tick(), START) is None
    assert [(j.schedule, j.scheduled_at) for j in store.reads.jobs()] == [("nightly", START)]
    assert schedules.next_due() == START + MINUTE


def test_fire_due_fires_a_batch_in_one_go(store: Store, schedules: ScheduleStore) -> None:
    for name in ("a", "b", "c"):
        upsert(schedules, spec(name), START, START)
    upsert(schedules, spec("later"), START + MINUTE, START)
    firings = schedules.fire_due(
        START, 10, lambda schedule: (START + MINUTE, tick(name=schedule.name))
    )
    assert firings.taken == 3
    assert [(f.schedule.name, [j.scheduled_at for j in f.jobs]) for f in firings.fired] == [
        (name, [START]) for name in ("a", "b", "c")
    ]
    assert sorted(j.schedule or "" for j in store.reads.jobs()) == ["a", "b", "c"]
    assert schedules.next_due() == START + MINUTE
    assert offered(schedules, START, 10) == [], "each moved on"


def test_concurrent_fires_of_one_tick_enqueue_one_job(
    store: Store, schedules: ScheduleStore
) -> None:
    schedule = upsert(schedules, spec(), START, START)
    results: list[bool] = []
    start = threading.Barrier(4)

    def fire() -> None:
        start.wait()
        results.append(schedules.fire(schedule, START + MINUTE, tick(), START) is not None)

    threads = [threading.Thread(target=fire) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, False, False, True]
    assert len(store.reads.jobs()) == 1


def test_a_tick_whose_job_exists_is_skipped_but_the_schedule_advances(
    store: Store, schedules: ScheduleStore
) -> None:
    schedule = upsert(schedules, spec(), START, START)
    store.jobs.enqueue(tick(), START)  # another instance's job of the same tick
    assert schedules.fire(schedule, START + MINUTE, tick(), START)
    assert len(store.reads.jobs()) == 1
    assert schedules.next_due() == START + MINUTE


def test_manual_runs_stay_out_of_the_tick_key(store: Store, schedules: ScheduleStore) -> None:
    schedule = upsert(schedules, spec(), START, START)
    manual = replace(tick()[0], manual=True)
    store.jobs.enqueue([manual, *tick(), manual], START)
    assert schedules.fire(schedule, START + MINUTE, tick(), START), "the tick's job is skipped"
    found = sorted((j.scheduled_at, j.manual) for j in store.reads.jobs())
    assert found == [(START, False), (START, True), (START, True)]
    assert schedules.stats(START)["nightly"].runs == 0, "none started yet"


def test_set_state_moves_one_or_all_from_the_sources_given(schedules: ScheduleStore) -> None:
    for name in ("a", "b", "c"):
        upsert(schedules, spec(name), START, START)
    assert schedules.set_state("a", PAUSED, (ACTIVE,), START, "test") == 1
    assert schedules.set_state("a", PAUSED, (ACTIVE,), START, "test") == 0
    assert schedules.set_state("missing", PAUSED, (ACTIVE,), START, "test") == 0
    assert schedules.set_state(None, PAUSED, (ACTIVE,), START, "test") == 2
    assert schedules.set_state(None, CANCELLED, (ACTIVE, PAUSED), START, "test") == 3
    assert {s.state for s in schedules.all()} == {CANCELLED}


def test_resume_restarts_paused_schedules_at_their_next_run(schedules: ScheduleStore) -> None:
    upsert(schedules, spec("paused"), START - MINUTE, START)
    upsert(schedules, spec("active"), START - MINUTE, START)
    schedules.set_state("paused", PAUSED, (ACTIVE,), START, "test")
    later = START + 10 * MINUTE
    resumed = schedules.resume({"paused": later, "active": later, "missing": later}, START, "t")
    assert resumed == 1
    paused, active = schedules.get("paused"), schedules.get("active")
    assert paused is not None and (paused.state, paused.next_run_at) == (ACTIVE, later)
    assert active is not None and active.next_run_at == START - MINUTE, "not paused: untouched"


def test_disable_retires_live_schedules_only(schedules: ScheduleStore) -> None:
    for name in ("a", "b", "gone"):
        upsert(schedules, spec(name), START, START)
    schedules.set_state("gone", CANCELLED, (ACTIVE,), START, "test")
    schedules.set_state("b", PAUSED, (ACTIVE,), START, "test")
    assert schedules.disable([], START) == 0
    assert schedules.disable(["a", "b", "gone", "missing"], START) == 2
    assert [s.name for s in schedules.all((DISABLED,))] == ["a", "b"]
    assert offered(schedules, START, 10) == []


def test_stats_count_runs_failures_and_running_jobs_per_schedule(
    store: Store, schedules: ScheduleStore
) -> None:
    upsert(schedules, spec("s"), START, START)
    upsert(schedules, spec("idle"), START, START)
    ok, bad, running, _waiting = store.jobs.enqueue(
        [new(schedule="s", scheduled_at=START + MINUTE * n) for n in range(4)], START
    )
    store.jobs.enqueue([new("other")], START)
    store.jobs.complete("w1", [outcome(claimed(store, ok), VerdictKind.SUCCEEDED)], START)
    later = START + MINUTE
    store.jobs.complete(
        "w1", [outcome(claimed(store, bad, now=later), VerdictKind.FAILED, later)], later
    )
    claimed(store, running, now=later + MINUTE)
    stats = schedules.stats(START - MINUTE)
    assert sorted(stats) == ["idle", "s"] and stats["idle"] == ScheduleStats()
    assert stats["s"].runs == 3 and stats["s"].failures == 1 and stats["s"].running == 1
    assert stats["s"].last_run == later + MINUTE


def test_stats_count_runs_and_failures_of_the_ticks_since_the_window_only(
    store: Store, schedules: ScheduleStore
) -> None:
    upsert(schedules, spec("s"), START, START)
    old, _newer = store.jobs.enqueue(
        [new(schedule="s", scheduled_at=START + MINUTE * n) for n in range(2)], START
    )
    store.jobs.complete("w1", [outcome(claimed(store, old), VerdictKind.FAILED)], START)
    stats = schedules.stats(START + MINUTE)
    assert (stats["s"].runs, stats["s"].failures, stats["s"].running) == (0, 0, 0)
    assert stats["s"].last_run == START, "the last run is the newest started tick, however old"
