"""rota: durable background jobs and minute-level cron on MySQL/MariaDB, PostgreSQL or SQLite."""

from __future__ import annotations

from rota.app import Rota
from rota.context import Cancellation, JobContext
from rota.core.backoff import RetryPolicy
from rota.core.clock import Clock, SystemClock
from rota.core.events import EventName
from rota.core.model import AttemptError, Counts, DrainResult, Job, JobState, JobStatus, Progress
from rota.core.schedules import Schedule, ScheduleAction, ScheduleChange
from rota.core.search import BulkAction, Filter, Page
from rota.core.workflow import Batch, BatchStatus, Step
from rota.enqueue import Enqueue
from rota.errors import (
    ConfigError,
    DatabaseUnavailable,
    DependencyFailed,
    ErrorCode,
    ExecutionFailed,
    FailedByHandler,
    InvalidArguments,
    InvalidCron,
    InvalidResult,
    InvalidTimezone,
    JobCancelled,
    JobFailed,
    JobNotFound,
    JobTimeout,
    LeaseLost,
    ResultTimeout,
    RotaError,
    ScheduleConflict,
    ScheduleNotFound,
    StoreError,
    TaskNotRegistered,
    TransientStoreError,
    WorkerDied,
)
from rota.observe.events import Event
from rota.outcomes import Fail, Retry, Snooze
from rota.tasks import TaskDefinition

__version__ = "0.1.0"

__all__ = [
    "AttemptError",
    "Batch",
    "BatchStatus",
    "BulkAction",
    "Cancellation",
    "Clock",
    "ConfigError",
    "Counts",
    "DatabaseUnavailable",
    "DependencyFailed",
    "DrainResult",
    "Enqueue",
    "ErrorCode",
    "Event",
    "EventName",
    "ExecutionFailed",
    "Fail",
    "FailedByHandler",
    "Filter",
    "InvalidArguments",
    "InvalidCron",
    "InvalidResult",
    "InvalidTimezone",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobNotFound",
    "JobState",
    "JobStatus",
    "JobTimeout",
    "LeaseLost",
    "Page",
    "Progress",
    "ResultTimeout",
    "Retry",
    "RetryPolicy",
    "Rota",
    "RotaError",
    "Schedule",
    "ScheduleAction",
    "ScheduleChange",
    "ScheduleConflict",
    "ScheduleNotFound",
    "Snooze",
    "Step",
    "StoreError",
    "SystemClock",
    "TaskDefinition",
    "TaskNotRegistered",
    "TransientStoreError",
    "WorkerDied",
    "__version__",
]
