"""The job state graph and the ``Transition`` values that move a job along one of its edges.

::

                      claim
        pending ───────────────▶ running ──── succeed ────▶ succeeded
         │  ▲                     │  │ │
         │  └── retry / release ──┘  │ └───── fail ───────▶ failed
         │      / rescue             │
         │                           └─────── cancel ─────▶ cancelled
         ├──────────────── cancel ────────────────────────▶ cancelled
         │  ▲
       pause  resume
         ▼  │
        paused ───────────────────── cancel ──────────────▶ cancelled

        failed, cancelled ── manual retry ──▶ pending    (API, CLI or dashboard)

``retry`` spends an attempt and waits for the back-off; ``release`` (graceful shutdown) gives
the attempt back; ``rescue`` is a retry decided for a job whose lease expired.  The store writes
a transition as a compare-and-set on ``state = 'running'`` and the lease owner, so a worker that
finishes after its job was rescued changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from rota.core.backoff import RetryPolicy, retry_delay
from rota.core.model import AttemptError, Job, JobState

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
        (JobState.FAILED, JobState.PENDING),
        (JobState.CANCELLED, JobState.PENDING),
    }
)

LEASE_EXPIRED = "LEASE_EXPIRED"


class OutcomeKind(str, Enum):
    """How one attempt ended, as the executor saw it."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    RELEASED = "released"


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    error: AttemptError | None = None
    retryable: bool = True


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
    outcome: Outcome,
    now: datetime,
    policy: RetryPolicy,
    rng: random.Random,
) -> Transition:
    """Decide where a running job goes once its attempt has ended."""
    if outcome.kind is OutcomeKind.SUCCEEDED:
        return Transition(job.id, JobState.RUNNING, JobState.SUCCEEDED, job.attempt, now)
    if outcome.kind is OutcomeKind.CANCELLED:
        return Transition(job.id, JobState.RUNNING, JobState.CANCELLED, job.attempt, now)
    if outcome.kind is OutcomeKind.RELEASED:
        return Transition(
            job.id, JobState.RUNNING, JobState.PENDING, job.attempt - 1, now, run_at=now
        )
    errors = job.errors + ((outcome.error,) if outcome.error else ())
    return _retry_or_fail(job, errors, outcome.retryable, now, policy, rng)


def rescue(job: Job, now: datetime, policy: RetryPolicy, rng: random.Random) -> Transition:
    """Decide where a running job goes when its worker stopped renewing the lease."""
    if job.cancel_requested:
        return Transition(job.id, JobState.RUNNING, JobState.CANCELLED, job.attempt, now)
    lost = AttemptError(
        attempt=job.attempt,
        at=now,
        code=LEASE_EXPIRED,
        type="LeaseExpired",
        message=f"worker {job.lease_owner} stopped renewing its lease",
    )
    return _retry_or_fail(job, (*job.errors, lost), True, now, policy, rng, immediate=True)


def manual_retry(job: Job, now: datetime) -> Transition:
    """A failed or cancelled job back to pending with a fresh attempt budget, history kept."""
    return Transition(job.id, job.state, JobState.PENDING, 0, now, run_at=now, errors=job.errors)


def lease_until(now: datetime, lease_seconds: float) -> datetime:
    return now + timedelta(seconds=lease_seconds)


def _retry_or_fail(
    job: Job,
    errors: tuple[AttemptError, ...],
    retryable: bool,
    now: datetime,
    policy: RetryPolicy,
    rng: random.Random,
    *,
    immediate: bool = False,
) -> Transition:
    max_attempts = job.max_attempts if job.max_attempts is not None else policy.max_attempts
    if retryable and job.attempt < max_attempts:
        delay = 0.0 if immediate else retry_delay(policy, job.attempt, rng)
        return Transition(
            job.id,
            JobState.RUNNING,
            JobState.PENDING,
            job.attempt,
            now,
            run_at=now + timedelta(seconds=delay),
            errors=errors,
            retry_in=delay,
        )
    return Transition(job.id, JobState.RUNNING, JobState.FAILED, job.attempt, now, errors=errors)
