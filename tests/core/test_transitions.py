from __future__ import annotations

import itertools
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core.backoff import RetryPolicy
from rota.core.model import AttemptError, Job, JobState
from rota.core.transitions import (
    Transition,
    Verdict,
    VerdictKind,
    after_attempt,
    rescue,
)
from rota.errors import ErrorCode

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
POLICY = RetryPolicy(retries=2, delay=10, jitter=0)


def running(attempt: int = 1, max_attempts: int | None = 3, **changes: object) -> Job:
    job = Job(
        id=7,
        task="t",
        queue="default",
        args=(),
        kwargs={},
        state=JobState.RUNNING,
        attempt=attempt,
        max_attempts=max_attempts,
        priority=0,
        run_at=NOW,
        created_at=NOW,
        lease_owner="w1",
        lease_until=NOW,
    )
    return replace(job, **changes)  # type: ignore[arg-type]


def failure(attempt: int) -> Verdict:
    error = AttemptError(attempt, NOW, "EXECUTION_FAILED", "ValueError", "boom")
    return Verdict(VerdictKind.FAILED, error)


def decide(job: Job, outcome: Verdict) -> Transition:
    return after_attempt(job, outcome, NOW, POLICY, random.Random(0))


def test_success_finishes_the_job() -> None:
    transition = decide(running(), Verdict(VerdictKind.SUCCEEDED))
    assert (transition.target, transition.finishes) == (JobState.SUCCEEDED, True)


def test_failure_with_attempts_left_waits_for_the_back_off() -> None:
    transition = decide(running(attempt=1), failure(1))
    assert transition.target is JobState.PENDING
    assert transition.run_at == NOW + timedelta(seconds=10)
    assert transition.errors is not None and transition.errors[-1].message == "boom"


def test_failure_on_the_last_attempt_fails_the_job_keeping_every_error() -> None:
    earlier = AttemptError(1, NOW, "EXECUTION_FAILED", "ValueError", "first")
    job = running(attempt=3, errors=(earlier,))
    transition = decide(job, failure(3))
    assert transition.target is JobState.FAILED
    assert [e.message for e in transition.errors or ()] == ["first", "boom"]


def test_not_retryable_fails_at_once() -> None:
    outcome = replace(failure(1), retryable=False)
    assert decide(running(attempt=1), outcome).target is JobState.FAILED


def test_timeout_follows_the_retry_policy() -> None:
    error = AttemptError(1, NOW, "TIMEOUT", "JobTimeout", "slow")
    transition = decide(running(attempt=1), Verdict(VerdictKind.TIMED_OUT, error))
    assert transition.target is JobState.PENDING
    assert transition.new_error is not None and transition.new_error.code == "TIMEOUT"


def test_release_gives_the_attempt_back() -> None:
    transition = decide(running(attempt=2), Verdict(VerdictKind.RELEASED))
    assert (transition.target, transition.attempt, transition.run_at) == (
        JobState.PENDING,
        1,
        NOW,
    )


def test_unknown_max_attempts_takes_the_workers_policy() -> None:
    assert decide(running(attempt=3, max_attempts=None), failure(3)).target is JobState.FAILED
    assert decide(running(attempt=2, max_attempts=None), failure(2)).target is JobState.PENDING


def test_rescue_counts_the_lost_attempt_and_retries_at_once() -> None:
    transition = rescue(running(attempt=1), NOW, POLICY, random.Random(0))
    assert transition.target is JobState.PENDING
    assert transition.run_at == NOW
    assert transition.new_error is not None and transition.new_error.code == ErrorCode.LEASE_EXPIRED


def test_rescue_of_the_last_attempt_fails_and_of_a_cancelled_job_cancels() -> None:
    assert rescue(running(attempt=3), NOW, POLICY, random.Random(0)).target is JobState.FAILED
    cancelled = rescue(running(cancel_requested=True), NOW, POLICY, random.Random(0))
    assert cancelled.target is JobState.CANCELLED


# DESIGN.md's job states, written out here: a change to ``EDGES`` must change this too.
UNTIL = NOW + timedelta(days=3)
"""When a sleep ends, or a wait times out."""
GRAPH = {
    (JobState.PENDING, JobState.RUNNING),
    (JobState.PENDING, JobState.CANCELLED),
    (JobState.PENDING, JobState.PAUSED),
    (JobState.PAUSED, JobState.PENDING),
    (JobState.PAUSED, JobState.CANCELLED),
    (JobState.RUNNING, JobState.SUCCEEDED),
    (JobState.RUNNING, JobState.FAILED),
    (JobState.RUNNING, JobState.CANCELLED),
    (JobState.RUNNING, JobState.PENDING),
    (JobState.RUNNING, JobState.WAITING),
    (JobState.WAITING, JobState.PENDING),
    (JobState.WAITING, JobState.CANCELLED),
    (JobState.FAILED, JobState.PENDING),
    (JobState.CANCELLED, JobState.PENDING),
}


@pytest.mark.parametrize(
    ("source", "target"),
    list(itertools.product(JobState, JobState)),
    ids=lambda state: state.value,
)
def test_a_transition_exists_only_along_an_edge_of_the_graph(
    source: JobState, target: JobState
) -> None:
    if (source, target) in GRAPH:
        assert Transition(1, source, target, 1, NOW).target is target
    else:
        with pytest.raises(ValueError, match=f"no edge {source} -> {target}"):
            Transition(1, source, target, 1, NOW)


def expected(kind: VerdictKind, attempt: int, max_attempts: int | None) -> tuple[object, ...]:
    """(target, attempt, run_at) after an attempt, from DESIGN.md's rules and ``POLICY``."""
    if kind is VerdictKind.SUCCEEDED:
        return (JobState.SUCCEEDED, attempt, None)
    if kind is VerdictKind.CANCELLED:
        return (JobState.CANCELLED, attempt, None)
    if kind in (VerdictKind.RELEASED, VerdictKind.SNOOZED):
        return (JobState.PENDING, attempt - 1, NOW)
    if kind is VerdictKind.PARKED:
        return (JobState.PENDING, attempt - 1, UNTIL)
    if kind is VerdictKind.WAITING:
        return (JobState.WAITING, attempt - 1, UNTIL)
    budget = max_attempts if max_attempts is not None else POLICY.retries + 1
    if attempt < budget:
        back_off = min(POLICY.cap, POLICY.delay * 2 ** (attempt - 1))
        return (JobState.PENDING, attempt, NOW + timedelta(seconds=back_off))
    return (JobState.FAILED, attempt, None)


@given(
    kind=st.sampled_from(list(VerdictKind)),
    attempt=st.integers(1, 10),
    max_attempts=st.one_of(st.none(), st.integers(1, 10)),
)
def test_every_outcome_takes_its_edge_and_final_states_stamp_the_time(
    kind: VerdictKind, attempt: int, max_attempts: int | None
) -> None:
    job = running(attempt=attempt, max_attempts=max_attempts)
    failing = kind in (VerdictKind.FAILED, VerdictKind.TIMED_OUT)
    error = AttemptError(attempt, NOW, "X", "X", "x") if failing else None
    parked = kind in (VerdictKind.PARKED, VerdictKind.WAITING)
    signal = "approved" if kind is VerdictKind.WAITING else None
    verdict = Verdict(kind, error, until=UNTIL if parked else None, signal=signal)
    transition = after_attempt(job, verdict, NOW, POLICY, random.Random(0))
    target, next_attempt, run_at = expected(kind, attempt, max_attempts)
    assert (transition.job_id, transition.source, transition.at) == (7, JobState.RUNNING, NOW)
    assert (transition.target, transition.attempt, transition.run_at) == (
        target,
        next_attempt,
        run_at,
    )
    final = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
    assert transition.finishes is (target in final)
    assert transition.errors == ((error,) if failing else None)
