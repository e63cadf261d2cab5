"""Overlap policies at the store: what a firing tick writes while the schedule's previous run
is unfinished (skip: nothing but a history entry; queue: a job held by links until the previous
run has ended, whatever its end; allow: a job free to run beside it)."""

from __future__ import annotations

from dataclasses import replace

from rota.core.model import JobState
from rota.core.overlap import Overlap
from rota.core.schedules import ScheduleAction
from rota.core.transitions import VerdictKind
from rota.store import ScheduleStore, Store
from tests.conftest import START
from tests.store.contract.support import claim, claimed, outcome, state
from tests.store.contract.test_schedules import MINUTE, spec, tick, upsert

SECOND_TICK = START + MINUTE


def fire_two_ticks(store: Store, schedules: ScheduleStore, overlap: Overlap) -> list[int]:
    """Fire the tick at START, claim its job (running), then fire the next tick: the ids of
    the schedule's jobs after."""
    schedule = upsert(schedules, replace(spec(cron="* * * * *"), overlap=overlap), START, START)
    assert schedules.fire(schedule, SECOND_TICK, tick(START), START)
    (first,) = [job.id for job in store.reads.jobs()]
    claimed(store, first)
    again = schedules.get("nightly")
    assert again is not None
    decision = schedules.fire(again, SECOND_TICK + MINUTE, tick(SECOND_TICK), SECOND_TICK)
    assert decision is not None
    assert decision.unfinished == (() if overlap is Overlap.ALLOW else (first,)), "allow: not read"
    return sorted(job.id for job in store.reads.jobs())


def test_skip_enqueues_nothing_while_the_previous_run_runs_and_records_it(
    store: Store, schedules: ScheduleStore
) -> None:
    (first,) = fire_two_ticks(store, schedules, Overlap.SKIP)
    skipped, *_ = schedules.history_of("nightly")
    assert (skipped.action, skipped.actor) == (ScheduleAction.SKIPPED, "scheduler")
    assert skipped.new == {"tick": SECOND_TICK.isoformat(), "unfinished": [first]}
    moved = schedules.get("nightly")
    assert moved is not None and moved.next_run_at == SECOND_TICK + MINUTE
    assert moved.last_run_at == START, "a skipped tick is no run"


def test_skip_lets_the_tick_through_once_the_previous_run_ended(
    store: Store, schedules: ScheduleStore
) -> None:
    schedule = upsert(schedules, spec(cron="* * * * *"), START, START)
    assert schedules.fire(schedule, SECOND_TICK, tick(START), START)
    (first,) = [job.id for job in store.reads.jobs()]
    store.jobs.complete("w1", [outcome(claimed(store, first), VerdictKind.FAILED)], START)
    again = schedules.get("nightly")
    assert again is not None
    decision = schedules.fire(again, SECOND_TICK + MINUTE, tick(SECOND_TICK), SECOND_TICK)
    assert decision is not None and decision.enqueue == (SECOND_TICK,)
    assert len(store.reads.jobs()) == 2
    assert [c.action for c in schedules.history_of("nightly")] == [ScheduleAction.CREATED]


def test_skip_of_several_ticks_in_one_pass_enqueues_only_the_first(
    store: Store, schedules: ScheduleStore
) -> None:
    schedule = upsert(schedules, spec(cron="* * * * *"), START, START)
    ticks = [*tick(START), *tick(SECOND_TICK)]
    decision = schedules.fire(schedule, SECOND_TICK + MINUTE, ticks, SECOND_TICK)
    assert decision is not None and decision.skipped == (SECOND_TICK,)
    assert [job.scheduled_at for job in store.reads.jobs()] == [START]


def test_queue_holds_the_tick_until_the_previous_run_ended_even_badly(
    store: Store, schedules: ScheduleStore
) -> None:
    first, second = fire_two_ticks(store, schedules, Overlap.QUEUE)
    assert claim(store, now=SECOND_TICK) == [], "held while the previous run runs"
    assert store.reads.job(second) is not None
    running = store.reads.job(first)
    assert running is not None
    store.jobs.complete("w1", [outcome(running, VerdictKind.FAILED)], SECOND_TICK)
    assert claim(store, now=SECOND_TICK) == [second], "a failed run frees it, not cancels it"
    found = store.reads.job(second)
    assert found is not None and found.depends_on == (), "a wait is not a dependency"


def test_queue_chains_the_ticks_of_one_pass(store: Store, schedules: ScheduleStore) -> None:
    schedule = upsert(
        schedules, replace(spec(cron="* * * * *"), overlap=Overlap.QUEUE), START, START
    )
    ticks = [*tick(START), *tick(SECOND_TICK)]
    assert schedules.fire(schedule, SECOND_TICK + MINUTE, ticks, SECOND_TICK)
    first, second = sorted(job.id for job in store.reads.jobs())
    assert claim(store, now=SECOND_TICK) == [first], "the second waits for the first"
    running = store.reads.job(first)
    assert running is not None
    store.jobs.complete("w1", [outcome(running, VerdictKind.SUCCEEDED)], SECOND_TICK)
    assert claim(store, now=SECOND_TICK) == [second]


def test_allow_lets_both_runs_start_at_once(store: Store, schedules: ScheduleStore) -> None:
    first, second = fire_two_ticks(store, schedules, Overlap.ALLOW)
    assert claim(store, now=SECOND_TICK) == [second], "free beside the running one"
    assert [c.action for c in schedules.history_of("nightly")] == [ScheduleAction.CREATED]
    assert state(store, first) is JobState.RUNNING


def test_a_tick_that_already_has_its_job_is_no_run_to_give_way_to(
    store: Store, schedules: ScheduleStore
) -> None:
    """A resumed schedule plans again the tick it had fired: its finished job is neither a new
    run nor a reason to skip the next tick of the same pass."""
    schedule = upsert(schedules, spec(cron="* * * * *"), START, START)
    assert schedules.fire(schedule, SECOND_TICK, tick(START), START)
    (first,) = [job.id for job in store.reads.jobs()]
    store.jobs.complete("w1", [outcome(claimed(store, first), VerdictKind.SUCCEEDED)], START)
    again = schedules.get("nightly")
    assert again is not None
    both = [*tick(START), *tick(SECOND_TICK)]
    decision = schedules.fire(replace(again, next_run_at=START), SECOND_TICK, both, SECOND_TICK)
    assert decision is None, "the CAS on next_run_at still guards the pass"
    decision = schedules.fire(again, SECOND_TICK + MINUTE, both, SECOND_TICK)
    assert decision is not None and (decision.enqueue, decision.skipped) == ((SECOND_TICK,), ())
    assert sorted(job.scheduled_at or START for job in store.reads.jobs()) == [START, SECOND_TICK]
