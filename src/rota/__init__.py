"""rota: durable background jobs and minute-level cron on MySQL/MariaDB, PostgreSQL or SQLite."""

from __future__ import annotations

from rota.app import Rota
from rota.context import Cancellation, JobContext
from rota.core.backoff import RetryPolicy
from rota.core.clock import Clock, SystemClock
from rota.core.model import AttemptError, Counts, DrainResult, Job, JobState, JobStatus
from rota.enqueue import Enqueue
from rota.errors import (
    ConfigError,
    DatabaseUnavailable,
    ExecutionFailed,
    InvalidArguments,
    InvalidCron,
    InvalidTimezone,
    JobCancelled,
    JobNotFound,
    JobTimeout,
    RotaError,
    ScheduleNotFound,
    StoreError,
    TaskNotRegistered,
    TransientStoreError,
    WorkerDied,
)
from rota.observe.events import Event
from rota.tasks import TaskDefinition

__version__ = "0.1.0"

__all__ = [
    "AttemptError",
    "Cancellation",
    "Clock",
    "ConfigError",
    "Counts",
    "DatabaseUnavailable",
    "DrainResult",
    "Enqueue",
    "Event",
    "ExecutionFailed",
    "InvalidArguments",
    "InvalidCron",
    "InvalidTimezone",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobNotFound",
    "JobState",
    "JobStatus",
    "JobTimeout",
    "RetryPolicy",
    "Rota",
    "RotaError",
    "ScheduleNotFound",
    "StoreError",
    "SystemClock",
    "TaskDefinition",
    "TaskNotRegistered",
    "TransientStoreError",
    "WorkerDied",
    "__version__",
]
