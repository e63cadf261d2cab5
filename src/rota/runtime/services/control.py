"""Acting on jobs and queues: pause and resume (one job, a queue for the whole cluster, or
everything), cancel and retry.

A paused job is in its own state, ``paused``, and is never claimed.  A paused queue is a row of
the queues table that every claim reads, so no worker anywhere claims from it; its jobs keep
their ``pending`` rows (resuming writes no job) and read ``paused`` (``core.model.seen_state``).
``pause()`` with no id pauses every schedule and every queue known now: to this process, to a
live worker, to a schedule or by a waiting job.
"""

from __future__ import annotations

from collections.abc import Sequence

from rota.core.events import EventName
from rota.core.model import Job, JobState
from rota.core.names import check_name
from rota.core.schedules import ScheduleState
from rota.errors import InvalidArguments, JobNotFound
from rota.runtime.announcer import Announcer
from rota.runtime.common import Common, Gate
from rota.runtime.retention import Retention, prune_finished
from rota.runtime.services.schedules import ScheduleControl


class Control:
    def __init__(
        self,
        common: Common,
        schedules: ScheduleControl,
        configured_queues: Sequence[str],
        gate: Gate,
        announcer: Announcer,
    ) -> None:
        self.store, self.registry, self.clock, self.events = common
        self.schedules = schedules
        self.configured_queues = tuple(configured_queues)
        self.gate = gate
        self.announcer = announcer

    def pause(self, id: int | str | None) -> bool:
        self.gate.ensure_ready()
        if isinstance(id, str):
            return bool(self.schedules.switch(id, ScheduleState.PAUSED, ScheduleState.ACTIVE))
        if id is not None:
            return self.move(job_id(id), JobState.PENDING, JobState.PAUSED, EventName.JOB_PAUSED)
        paused = self.schedules.switch(None, ScheduleState.PAUSED, ScheduleState.ACTIVE)
        return bool(self.queues(self._known_queues(), paused=True)) or bool(paused)

    def resume(self, id: int | str | None) -> bool:
        self.gate.ensure_ready()
        if id is not None and not isinstance(id, str):
            resumed = self.move(
                job_id(id), JobState.PAUSED, JobState.PENDING, EventName.JOB_RESUMED
            )
        elif id is not None:
            resumed = bool(self.schedules.resume(id))
        else:
            schedules = self.schedules.resume(None)
            queues = self.queues(sorted(self.store.cluster.paused_queues()), paused=False)
            resumed = bool(queues) or bool(schedules)
        self.gate.wake_scheduler()
        self.gate.wake_worker()
        return resumed

    def queue(self, name: str, *, paused: bool) -> bool:
        self.gate.ensure_ready()
        changed = bool(self.queues([check_name("queue", name, InvalidArguments)], paused=paused))
        if not paused:
            self.gate.wake_worker()
        return changed

    def paused_queues(self) -> list[str]:
        self.gate.ensure_ready()
        return sorted(self.store.cluster.paused_queues())

    def move(self, id: int, source: JobState, target: JobState, event: EventName) -> bool:
        """Move job ``id`` from ``source`` to ``target``; ``event`` announces it if it moved."""
        moved = self.store.jobs.set_job_state(id, source, target)
        if moved is None:
            raise JobNotFound(f"job {id} does not exist")
        if moved:
            self.events.emit(event, job_id=id)
        return moved

    def queues(self, names: Sequence[str], *, paused: bool) -> list[str]:
        """Pause or resume these queues; the names whose state changed (each logged)."""
        if not names:
            return []
        changed = self.store.cluster.set_queues_paused(names, paused, self.clock.now())
        event = EventName.QUEUE_PAUSED if paused else EventName.QUEUE_RESUMED
        for name in changed:
            self.events.emit(event, queue=name)
        return changed

    def cancel(self, id: int | str) -> bool:
        """A pending or paused job ends ``cancelled`` at once, a running one is asked to stop
        (at its worker's next heartbeat), a live schedule ends; ``False`` otherwise.  What was
        done is announced once committed."""
        self.gate.ensure_ready()
        if isinstance(id, str):
            return self.schedules.cancel(id)
        checked = job_id(id)
        applied = self.store.jobs.cancel(checked, self.clock.now())
        if applied is None or not (applied.job_ids or applied.requested):
            return False
        job = self.store.reads.job(checked)
        if job is not None:
            self.announcer.cancelled(job, applied)
        return True

    def retry(self, job: Job) -> bool:
        """A failed or cancelled job back to pending with a fresh attempt budget
        (``job.retried``, with the attempts it had made)."""
        if job.state not in (JobState.FAILED, JobState.CANCELLED):
            return False
        retried = bool(self.store.finished.retry([job.id], self.clock.now()))
        if retried:
            self.announcer.retried(job)
        self.gate.wake_worker()
        return retried

    def prune(self, retention: Retention) -> int:
        self.gate.ensure_ready()
        return prune_finished(self.store, retention, self.clock.now())

    def find(self, id: object) -> Job:
        """The job's record; ``JobNotFound`` (code ``JOB_NOT_FOUND``) if there is none."""
        checked = job_id(id)
        self.gate.ensure_ready()
        found = self.store.reads.job(checked)
        if found is None:
            raise JobNotFound(f"job {checked} does not exist")
        return found

    def _known_queues(self) -> list[str]:
        known = {
            *self.registry.queues(),
            *self.configured_queues,
            *self.store.reads.waiting_queues(),
        }
        known |= {schedule.spec.queue for schedule in self.store.schedules.all()}
        for worker in self.store.cluster.workers(self.clock.now()):
            known |= set(worker.queues)
        return sorted(known)


def job_id(value: object) -> int:
    """Job ids are positive ints; anything else is a caller's mistake, not a missing job."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArguments(f"a job id is an int, got {type(value).__name__}")
    return value
