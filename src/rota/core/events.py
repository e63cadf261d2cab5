"""The names of the events rota announces: one enum, so that what is emitted, what ``Rota.on``
accepts and what the documentation lists are one list.

Every record rota logs with an ``event`` attribute, and every ``Event`` a hook receives, is
named by a member.  The event log (``rota.observe.events``) refuses any other name; the store,
which may not import it, announces through the sink it is given (``rota.store.events``).
"""

from __future__ import annotations

from enum import Enum


class EventName(str, Enum):
    """A dotted event name (``job.failed``); ``str(name)`` and ``name == "job.failed"`` give
    the text that log records and hooks carry."""

    WORKER_STARTED = "worker.started"
    WORKER_STOPPING = "worker.stopping"
    WORKER_GRACE_SKIPPED = "worker.grace_skipped"
    WORKER_ABANDONED = "worker.abandoned"
    WORKER_STOPPED = "worker.stopped"
    WORKER_START_INTERRUPTED = "worker.start_interrupted"
    WORKER_FAILED = "worker.failed"
    WORKER_CLAIM_LOOP_DIED = "worker.claim_loop_died"
    WORKER_CLAIM_OUTLIVED = "worker.claim_outlived"
    WORKER_LOOP_ERROR = "worker.loop_error"
    WORKER_DB_ERROR = "worker.db_error"
    WORKER_DB_RECOVERED = "worker.db_recovered"
    WORKER_CLOCK_SKEW = "worker.clock_skew"
    WORKER_LOST_JOBS = "worker.lost_jobs"
    WORKER_LOOP_BLOCKED = "worker.loop_blocked"
    WORKER_LOOP_UNBLOCKED = "worker.loop_unblocked"
    WORKER_REPORT_SPLIT = "worker.report_split"
    WORKER_RESULT_UNWRITABLE = "worker.result_unwritable"
    WORKER_REPORT_DROPPED = "worker.report_dropped"
    WORKER_REPORT_ABANDONED = "worker.report_abandoned"
    WORKER_DEFINITION_CONFLICT = "worker.definition_conflict"

    JOB_UNKNOWN_TASK = "job.unknown_task"
    JOB_SCHEDULED = "job.scheduled"
    JOB_STARTED = "job.started"
    JOB_SUCCEEDED = "job.succeeded"
    JOB_FAILED = "job.failed"
    JOB_RETRYING = "job.retrying"
    JOB_SNOOZED = "job.snoozed"
    JOB_SLEEPING = "job.sleeping"
    JOB_WAITING = "job.waiting"
    JOB_TIMED_OUT = "job.timed_out"
    JOB_CHILD_KILLED = "job.child_killed"
    JOB_CANCELLED = "job.cancelled"
    JOB_CANCEL_REQUESTED = "job.cancel_requested"
    JOB_RELEASED = "job.released"
    JOB_RECOVERED = "job.recovered"
    JOB_LOST = "job.lost"
    JOB_STUCK = "job.stuck"
    JOB_PAUSED = "job.paused"
    JOB_RESUMED = "job.resumed"
    JOB_RETRIED = "job.retried"
    JOB_UPDATED = "job.updated"
    JOB_DELETED = "job.deleted"
    JOBS_BULK = "jobs.bulk"
    JOBS_PRUNED = "jobs.pruned"
    QUEUE_PAUSED = "queue.paused"
    QUEUE_RESUMED = "queue.resumed"

    SCHEDULE_MISSED = "schedule.missed"
    SCHEDULE_INVALID = "schedule.invalid"
    SCHEDULE_DISABLED = "schedule.disabled"
    SCHEDULE_UPDATED = "schedule.updated"
    SCHEDULE_OVERRIDDEN = "schedule.overridden"
    SCHEDULE_RESET = "schedule.reset"
    SCHEDULE_OVERRIDE_CLEARED = "schedule.override_cleared"
    SCHEDULE_FAILING = "schedule.failing"
    SCHEDULE_RECOVERED = "schedule.recovered"
    SCHEDULE_ALERT_SKIPPED = "schedule.alert_skipped"
    SCHEDULE_SKIPPED = "schedule.skipped"

    DB_UNAVAILABLE = "db.unavailable"
    DB_AVAILABLE = "db.available"
    DB_DISCONNECTED = "db.disconnected"
    DB_READ_ONLY = "db.read_only"
    ROW_UNREADABLE = "row.unreadable"
    SCHEMA_NEWER = "schema.newer"

    SUPERVISOR_STARTED = "supervisor.started"
    SUPERVISOR_RESTARTED = "supervisor.restarted"
    SUPERVISOR_GAVE_UP = "supervisor.gave_up"
    SUPERVISOR_STOPPING = "supervisor.stopping"
    SUPERVISOR_GRACE_SKIPPED = "supervisor.grace_skipped"
    SUPERVISOR_LOST = "supervisor.lost"

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__
    """Hash as the plain string, so that a name and its text are one key."""
