"""rota: durable background jobs and minute-level cron on MySQL/MariaDB, PostgreSQL or SQLite."""

from __future__ import annotations

from rota.app import Rota
from rota.context import JobContext
from rota.core.backoff import RetryPolicy
from rota.core.clock import Clock, SystemClock
from rota.core.model import AttemptError, DrainResult, Job, JobState, JobStatus
from rota.enqueue import Enqueue
from rota.errors import (
    ConfigError,
    DatabaseUnavailable,
    ExecutionFailed,
    InvalidArguments,
    InvalidCron,
    JobCancelled,
    JobNotFound,
    JobTimeout,
    RotaError,
    StoreError,
    TaskNotRegistered,
    TransientStoreError,
)
from rota.tasks import TaskDefinition

__version__ = "0.1.0"

__all__ = [
    "AttemptError",
    "Clock",
    "ConfigError",
    "DatabaseUnavailable",
    "DrainResult",
    "Enqueue",
    "ExecutionFailed",
    "InvalidArguments",
    "InvalidCron",
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
    "StoreError",
    "SystemClock",
    "TaskDefinition",
    "TaskNotRegistered",
    "TransientStoreError",
    "__version__",
]
