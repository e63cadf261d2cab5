"""Alerts on failing schedules: after ``alert_after_failures`` ticks in a row whose jobs
failed, the schedule is *failing* (``schedule.failing``, logged at ERROR and given to hooks);
the next tick that succeeds emits ``schedule.recovered``.

A tick counts once its job has reached a final state and that state is written: ``failed``
counts against the schedule, ``succeeded`` ends the run, ``cancelled`` counts neither way (nobody
let it fail).  The worker counts the ticks it finished, the rescue those whose worker died with
no attempt left.  Counting is a compare-and-set in the schedule's row
(``ScheduleStore.record_tick``), so however many processes finish ticks, each flip is reported
by one of them.  An error while counting is logged and the count skipped: an alert may come one
tick late, a job's outcome is never held back for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from rota.core.events import EventName
from rota.core.model import Job, JobState
from rota.core.transitions import Transition
from rota.errors import RotaError
from rota.observe.events import EventLog
from rota.store.base import ScheduleStore
from rota.tasks import TaskRegistry

logger = logging.getLogger("rota.worker")
COUNTED = {JobState.FAILED: True, JobState.SUCCEEDED: False}
"""The final states a tick counts by: whether it is a failure."""
FLIPS = {"failing": EventName.SCHEDULE_FAILING, "recovered": EventName.SCHEDULE_RECOVERED}
"""The event of each flip ``ScheduleStore.record_tick`` reports."""


class TickAlerts:
    def __init__(
        self,
        schedules: ScheduleStore,
        registry: TaskRegistry,
        events: EventLog,
        default: int | None,
    ) -> None:
        self.schedules = schedules
        self.registry = registry
        self.events = events
        self.default = default

    def threshold(self, job: Job) -> int | None:
        """Failures in a row that make the job's schedule failing; ``None``: not watched."""
        if job.schedule is None:
            return None
        definition = self.registry.find(job.task)
        own = definition.alert_after_failures if definition is not None else None
        return own if own is not None else self.default

    def ticks(self, ended: Iterable[tuple[Job, Transition]]) -> list[tuple[Job, Transition]]:
        """The outcomes among ``ended`` (written and applied) that count for a watched
        schedule, to ``record``."""
        return [
            (job, transition)
            for job, transition in ended
            if transition.target in COUNTED and self.threshold(job) is not None
        ]

    def record(self, finished: Sequence[tuple[Job, Transition]]) -> None:
        """Count the written outcomes of watched ticks and emit the flips (blocking: call it
        in a database thread)."""
        for job, transition in finished:
            threshold = self.threshold(job)
            if job.schedule is None or threshold is None or transition.target not in COUNTED:
                continue
            failed = COUNTED[transition.target]
            try:
                flip = self.schedules.record_tick(job.schedule, failed, threshold)
            except RotaError as error:
                self.events.log(
                    logger,
                    EventName.SCHEDULE_ALERT_SKIPPED,
                    logging.WARNING,
                    "could not count tick %s of schedule %r: %s",
                    job.scheduled_at,
                    job.schedule,
                    error,
                )
                continue
            if flip is not None:
                self._emit(flip, job, threshold, transition)

    def _emit(self, flip: str, job: Job, threshold: int, transition: Transition) -> None:
        error = transition.new_error
        self.events.emit(
            FLIPS[flip],
            logging.ERROR if flip == "failing" else logging.INFO,
            schedule=job.schedule,
            task=job.task,
            job_id=job.id,
            scheduled_at=job.scheduled_at,
            failures=threshold if flip == "failing" else None,
            error=None if error is None else f"{error.code}: {error.message}",
        )
