"""The job state graph and the ``Transition`` values that move a job along one of its edges.

::

                      claim
        pending ───────────────▶ running ──── succeed ────▶ succeeded
         │  ▲                     │  │ │
         │  └── retry / release ──┘  │ └───── fail ───────▶ failed
         │      / snooze / sleep /   │
         │      rescue               │
         │                           └─────── cancel ─────▶ cancelled
         ├──────────────── cancel ────────────────────────▶ cancelled
         │  ▲
       pause  resume
         ▼  │
        paused ───────────────────── cancel ──────────────▶ cancelled

        running ── wait_for ──▶ waiting ── signal / timeout ──▶ pending
                                waiting ── cancel ────────────▶ cancelled

        failed, cancelled ── manual retry ──▶ pending    (API, CLI or dashboard)

``retry`` spends an attempt and waits for the back-off (or the delay of a handler's
``Retry``); ``release`` (graceful shutdown) and a durable sleep (``ctx.sleep``: parked until
it ends) give the attempt back, and so does ``wait_for``, which parks the job ``waiting``
until a signal or its timeout; ``snooze`` (a handler's ``Snooze``) gives it back too and
counts one more of the job's ``max_snoozes``; ``rescue`` is a retry decided for a job whose
lease expired.  ``succeed`` carries the handler's result as JSON.  The store writes a
transition as a compare-and-set on ``state = 'running'`` and the lease owner, so a worker that
finishes after its job was rescued changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from rota.core.backoff import RetryPolicy, qualified, retry_delay
from rota.core.checks import LATEST
from rota.core.model import AttemptError, Job, JobState
from rota.errors import ErrorCode, InvalidResult

EDGES: frozenset[tuple[JobState, JobState]] = frozenset(
    {
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
)


class VerdictKind(str, Enum):
    """How one attempt ended, as the executor saw it."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    RELEASED = "released"
    SNOOZED = "snoozed"
    PARKED = "parked"
    """A durable sleep (``ctx.sleep``): pending until ``Verdict.until``, the attempt given back."""
    WAITING = "waiting"
    """``ctx.wait_for``: waiting for ``Verdict.signal`` until ``Verdict.until``, likewise."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The executor's verdict on one attempt (not ``rota.outcomes``, what a handler raises to
    decide it): ``after_attempt`` turns it into the job's ``Transition``."""

    kind: VerdictKind
    error: AttemptError | None = None
    retryable: bool = True
    delay: float | None = None
    """Seconds until the next attempt that the handler chose (``Retry``, ``Snooze``); ``None``:
    the back-off decides."""
    result: str | None = None
    """The handler's return value as JSON (``None`` when it returned ``None``)."""
    until: datetime | None = None
    """When a parked job runs again; a waiting one's timeout."""
    signal: str | None = None
    """The signal a waiting job waits for."""


@dataclass(frozen=True, slots=True)
class Transition:
    """One edge of the graph for one job, with everything the store must write."""

    job_id: int
    source: JobState
    target: JobState
    attempt: int
    at: datetime
    run_at: datetime | None = None
    errors: tuple[AttemptError, ...] | None = None
    retry_in: float | None = None
    result: str | None = None
    snoozes: int | None = None
    """The job's new snooze count, when the transition changes it."""
    waiting_for: str | None = None
    """The signal a job parked ``waiting`` waits for."""
    held: int | None = None
    """For a running job, the attempt it was held at: the store applies the transition only
    while the job is still at that attempt, so that the late outcome of a claim that lost its
    lease never lands on a later claim of the same job by the same worker."""

    def __post_init__(self) -> None:
        if (self.source, self.target) not in EDGES:
            raise ValueError(f"job {self.job_id}: no edge {self.source} -> {self.target}")

    @property
    def finishes(self) -> bool:
        return self.target.is_final

    @property
    def new_error(self) -> AttemptError | None:
        return self.errors[-1] if self.errors else None


def after_attempt(
    job: Job,
    verdict: Verdict,
    now: datetime,
    policy: RetryPolicy,
    rng: random.Random,
) -> Transition:
    """Decide where a running job goes once its attempt has ended."""
    if verdict.kind is VerdictKind.SUCCEEDED:  # made at once: every job's, on the hot path
        return Transition(
            job.id,
            JobState.RUNNING,
            JobState.SUCCEEDED,
            job.attempt,
            now,
            result=verdict.result,
            held=job.attempt,
        )
    return replace(_after_attempt(job, verdict, now, policy, rng), held=job.attempt)


def _after_attempt(
    job: Job, verdict: Verdict, now: datetime, policy: RetryPolicy, rng: random.Random
) -> Transition:
    if verdict.kind is VerdictKind.CANCELLED:
        return Transition(job.id, JobState.RUNNING, JobState.CANCELLED, job.attempt, now)
    if verdict.kind is VerdictKind.RELEASED:
        return Transition(
            job.id, JobState.RUNNING, JobState.PENDING, job.attempt - 1, now, run_at=now
        )
    if verdict.kind is VerdictKind.SNOOZED:
        return _snooze(job, verdict.delay or 0.0, now, policy)
    if verdict.kind in (VerdictKind.PARKED, VerdictKind.WAITING):
        waiting = verdict.kind is VerdictKind.WAITING
        target = JobState.WAITING if waiting else JobState.PENDING
        return Transition(
            job.id,
            JobState.RUNNING,
            target,
            job.attempt - 1,
            now,
            run_at=verdict.until,
            waiting_for=verdict.signal,
        )
    errors = job.errors + ((verdict.error,) if verdict.error else ())
    return _retry_or_fail(job, errors, verdict.retryable, now, policy, rng, verdict.delay)


def rescue(job: Job, now: datetime, policy: RetryPolicy, rng: random.Random) -> Transition:
    """Decide where a running job goes when its worker stopped renewing the lease."""
    return replace(_rescue(job, now, policy, rng), held=job.attempt)


def _rescue(job: Job, now: datetime, policy: RetryPolicy, rng: random.Random) -> Transition:
    if job.cancel_requested:
        return Transition(job.id, JobState.RUNNING, JobState.CANCELLED, job.attempt, now)
    lost = AttemptError(
        attempt=job.attempt,
        at=now,
        code=ErrorCode.LEASE_EXPIRED,
        type="LeaseExpired",
        message=f"worker {job.lease_owner} stopped renewing its lease"
        if job.lease_until is not None
        else "it was running with no lease, which no worker renews",
        worker=job.lease_owner,
    )
    return _retry_or_fail(job, (*job.errors, lost), True, now, policy, rng, 0.0)


def unwritable(job: Job, transition: Transition, message: str) -> Transition:
    """A success whose result the database will not store (too large for any statement): the
    attempt fails after all, with ``INVALID_RESULT`` and no retry, as for a result over
    ``max_result_bytes`` (the handler would return the same again); earlier errors are kept."""
    error = AttemptError(
        attempt=transition.attempt,
        at=transition.at,
        code=InvalidResult.code,
        type=qualified(InvalidResult),
        message=message,
    )
    errors = (*job.errors, error)
    return Transition(
        job.id,
        JobState.RUNNING,
        JobState.FAILED,
        transition.attempt,
        transition.at,
        errors=errors,
        held=transition.held,
    )


def lease_until(now: datetime, lease_seconds: float) -> datetime:
    return now + timedelta(seconds=lease_seconds)


def _retry_or_fail(
    job: Job,
    errors: tuple[AttemptError, ...],
    retryable: bool,
    now: datetime,
    policy: RetryPolicy,
    rng: random.Random,
    delay: float | None = None,
) -> Transition:
    """Another attempt after ``delay`` (``None``: the back-off) while attempts are left."""
    max_attempts = job.max_attempts if job.max_attempts is not None else policy.max_attempts
    if retryable and job.attempt < max_attempts:
        wait = retry_delay(policy, job.attempt, rng) if delay is None else delay
        return Transition(
            job.id,
            JobState.RUNNING,
            JobState.PENDING,
            job.attempt,
            now,
            run_at=_later(now, wait),
            errors=errors,
            retry_in=wait,
        )
    return Transition(job.id, JobState.RUNNING, JobState.FAILED, job.attempt, now, errors=errors)


def _snooze(job: Job, delay: float, now: datetime, policy: RetryPolicy) -> Transition:
    """Pending again after ``delay`` with the attempt given back, unless the job has snoozed
    ``max_snoozes`` times already: it then fails (``SNOOZE_LIMIT``), as retrying would only
    snooze again."""
    if policy.max_snoozes is not None and job.snoozes >= policy.max_snoozes:
        limit = AttemptError(
            attempt=job.attempt,
            at=now,
            code=ErrorCode.SNOOZE_LIMIT,
            type="SnoozeLimit",
            message=f"the job snoozed {job.snoozes} times, the most its max_snoozes allows",
        )
        errors = (*job.errors, limit)
        return Transition(
            job.id, JobState.RUNNING, JobState.FAILED, job.attempt, now, errors=errors
        )
    return Transition(
        job.id,
        JobState.RUNNING,
        JobState.PENDING,
        job.attempt - 1,
        now,
        run_at=_later(now, delay),
        snoozes=job.snoozes + 1,
    )


def _later(now: datetime, seconds: float) -> datetime:
    """``now`` plus ``seconds``, at most the latest moment every backend stores."""
    try:
        return min(now + timedelta(seconds=seconds), LATEST)
    except OverflowError:
        return LATEST
