"""Announcing committed facts: the one place a job's outcome is told to anyone.

Every path that ends or moves a job (a worker's attempt, a rescue after an expired lease, a
cancel, a cascade of cancellations, a manual retry) writes first and announces after its
transaction commits, only what the store says applied (``store.values.Applied``).  So a hook
that reads the job sees the state the event names, and a write another process won is never
announced.  The subscribers are this process's: the event log (the execution log and the
hooks), telemetry, a worker's Prometheus metrics (``observe.metrics``) and ``rota.result``
waiters; a worker's completer also counts tick alerts and drained outcomes from the same
announcements.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from rota.core.events import EventName
from rota.core.model import Job, JobRef, JobState
from rota.core.stuck import RunningJob
from rota.core.transitions import Transition, Verdict, VerdictKind
from rota.observe.events import EventLog
from rota.observe.metrics import WorkerMetrics
from rota.observe.otel import Telemetry
from rota.runtime.services.results import Completions
from rota.store.values import Applied, Cascaded

if TYPE_CHECKING:  # a worker's attempts are announced here; the worker uses this module
    from rota.runtime.worker.executor import Attempt

logger = logging.getLogger("rota.worker")


class Announcer:
    def __init__(
        self, events: EventLog, telemetry: Telemetry | None, completions: Completions
    ) -> None:
        self.events = events
        self.telemetry = telemetry
        self.completions = completions
        self.metrics: WorkerMetrics | None = None
        """Set while a worker serves metrics (``runtime.host``)."""

    def started(self, job: Job, now: Any) -> Any:
        """A claimed job's attempt begins (its claim is committed): ``job.started``, and the
        attempt's span, which ``attempts`` ends."""
        self.events.job(EventName.JOB_STARTED, job)
        if self.metrics is not None:
            self.metrics.started(job, now)
        return self.telemetry.begin(job, now) if self.telemetry else None

    def attempts(self, written: Sequence[Attempt], applied: Applied) -> list[Attempt]:
        """A batch of attempts was written: announce those that applied (their outcome, and
        the dependents they cancelled); the others, whose jobs another worker took meanwhile,
        are only counted.  Those that applied."""
        done = [attempt for attempt in written if attempt.transition.job_id in applied.job_ids]
        for attempt in done:
            if attempt.job.id in applied.cancelled:
                self.events.job(EventName.JOB_CANCELLED, attempt.job)
                self.completions.finished([attempt.job.id])
                if self.telemetry is not None:
                    self.telemetry.lost(attempt.span)
            else:
                self._attempt(attempt)
        lost = [attempt for attempt in written if attempt.transition.job_id not in applied.job_ids]
        if lost:
            if self.telemetry is not None:
                for attempt in lost:
                    self.telemetry.lost(attempt.span)
            self.events.log(
                logger,
                EventName.WORKER_LOST_JOBS,
                logging.WARNING,
                "%d of %d finished jobs were no longer held by this worker (lease expired?)",
                len(lost),
                len(written),
            )
        self._cascaded(applied.cascaded)
        self._wake([a.transition for a in done])
        return done

    def rescued(self, expired: Sequence[tuple[Job, Transition]], applied: Applied) -> None:
        """Jobs whose lease expired were taken back: ``job.recovered`` (saying where each went),
        and for one the rescue ended, ``job.failed`` or ``job.cancelled`` as for any ending;
        for those the rescue applied."""
        ended = [(job, t) for job, t in expired if t.job_id in applied.job_ids]
        for job, transition in ended:
            overdue = (transition.at - (job.lease_until or transition.at)) / timedelta(seconds=1)
            self.events.job(
                EventName.JOB_RECOVERED,
                job,
                logging.WARNING,
                lease_owner=job.lease_owner,
                to=transition.target.value,
                lease_expired_for=round(overdue, 3),
            )
            if transition.finishes:
                self._outcome(job, None, transition, {})
        self._cascaded(applied.cascaded)
        self._wake([t for _, t in ended])

    def cancelled(self, job: Job | JobRef, applied: Applied) -> None:
        """A cancel by the API: ``job.cancelled`` when it ended the job, ``job.cancel_requested``
        when its worker was asked to stop it."""
        if job.id in applied.job_ids:
            self.events.job(EventName.JOB_CANCELLED, job)
            self.completions.finished([job.id])
        elif job.id in applied.requested:
            self.events.job(EventName.JOB_CANCEL_REQUESTED, job)
        self._cascaded(applied.cascaded)

    def stuck(
        self, marked: Sequence[RunningJob], limits: Mapping[str, float], now: datetime
    ) -> None:
        """Running attempts were marked stuck (``core.stuck``): ``job.stuck`` for each one the
        mark applied to, with when it started, how long it has run and its task's limit."""
        for job in marked:
            self.events.job(
                EventName.JOB_STUCK,
                job.ref,
                logging.WARNING,
                started_at=job.started_at,
                running_for=round(job.running_for(now), 3),
                limit=limits.get(job.task),
                lease_owner=job.lease_owner,
            )

    def retried(self, job: Job | JobRef) -> None:
        """A failed or cancelled job was put back to pending by hand."""
        self.events.job(EventName.JOB_RETRIED, job)

    def _attempt(self, attempt: Attempt) -> None:
        job, verdict, transition = attempt.job, attempt.verdict, attempt.transition
        details: dict[str, Any] = {"duration_ms": round(attempt.duration * 1000, 3)}
        if verdict.kind is VerdictKind.TIMED_OUT:
            self.events.job(
                EventName.JOB_TIMED_OUT,
                job,
                logging.WARNING,
                **self._error(verdict, transition, details),
            )
        self._outcome(job, verdict, transition, details)
        if self.metrics is not None:
            self.metrics.ran(job, attempt.duration)
        if self.telemetry is not None:
            self.telemetry.end(
                attempt.span, job, verdict, transition, attempt.duration, attempt.error
            )

    def _outcome(
        self,
        job: Job,
        verdict: Verdict | None,
        transition: Transition,
        details: dict[str, Any],
    ) -> None:
        """The event of where ``transition`` took the job (``verdict``: how the attempt ended,
        ``None`` for a rescue)."""
        kind = verdict.kind if verdict is not None else None
        details = self._error(verdict, transition, details)
        target = transition.target
        if target is JobState.SUCCEEDED:
            event, level = EventName.JOB_SUCCEEDED, logging.INFO
        elif target is JobState.CANCELLED:
            event, level = EventName.JOB_CANCELLED, logging.INFO
        elif target is JobState.FAILED:
            event, level = EventName.JOB_FAILED, logging.ERROR
        elif kind is VerdictKind.RELEASED:
            event, level = EventName.JOB_RELEASED, logging.INFO
        elif kind is VerdictKind.PARKED:
            event, level = EventName.JOB_SLEEPING, logging.INFO
            details = {"until": transition.run_at, **details}
        elif kind is VerdictKind.WAITING:
            event, level = EventName.JOB_WAITING, logging.INFO
            details = {"signal": transition.waiting_for, "until": transition.run_at, **details}
        elif kind is VerdictKind.SNOOZED:
            event, level = EventName.JOB_SNOOZED, logging.INFO
            delay = round(verdict.delay or 0.0, 3) if verdict is not None else 0.0
            details = {"delay": delay, "snoozes": transition.snoozes, **details}
        else:
            event, level = EventName.JOB_RETRYING, logging.WARNING
            details = {"delay": round(transition.retry_in or 0.0, 3), **details}
        self.events.job(event, job, level, **details)
        if self.metrics is not None:
            self.metrics.outcome(event, job, transition.at)

    @staticmethod
    def _error(
        verdict: Verdict | None, transition: Transition, details: dict[str, Any]
    ) -> dict[str, Any]:
        error = (verdict.error if verdict is not None else None) or transition.new_error
        if error is None:
            return details
        return {
            **details,
            "error_code": error.code,
            "error_type": error.type,
            "error": error.message,
        }

    def _cascaded(self, cascaded: Sequence[Cascaded]) -> None:
        for each in cascaded:
            error = each.error
            self.events.job(
                EventName.JOB_CANCELLED,
                each.job,
                error_code=error.code,
                error_type=error.type,
                error=error.message,
            )
        if cascaded:
            self.completions.finished([each.job.id for each in cascaded])

    def _wake(self, transitions: Sequence[Transition]) -> None:
        ended = [t.job_id for t in transitions if t.finishes]
        if ended:
            self.completions.finished(ended)
