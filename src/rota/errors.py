"""Typed errors, each with a stable ``code`` from one enum, ``ErrorCode``, that logs, the CLI and
the dashboard can rely on.

The classes and their codes::

    RotaError                       ROTA_ERROR            (the root)
    ├── ConfigError                 CONFIG_ERROR          (also ValueError)
    ├── InvalidArguments            INVALID_ARGUMENTS     (also ValueError)
    ├── InvalidCron                 INVALID_CRON          (also ValueError)
    ├── InvalidTimezone             INVALID_TIMEZONE      (also ValueError)
    ├── TaskNotRegistered           TASK_NOT_REGISTERED   (also LookupError)
    ├── JobNotFound                 JOB_NOT_FOUND         (also LookupError)
    ├── ScheduleNotFound            SCHEDULE_NOT_FOUND    (also LookupError)
    ├── ScheduleConflict            SCHEDULE_CONFLICT     (an edit lost a compare-and-set)
    ├── JobCancelled                JOB_CANCELLED         (rota.result of a cancelled job)
    ├── JobFailed                   JOB_FAILED            (rota.result of a failed job)
    ├── ResultTimeout               RESULT_TIMEOUT        (also TimeoutError)
    ├── WorkerDied                  WORKER_DIED           (Rota.run(): the worker stopped itself)
    ├── StoreError                  STORE_ERROR
    │   ├── DatabaseUnavailable     DATABASE_UNAVAILABLE
    │   └── TransientStoreError     TRANSIENT_STORE_ERROR (deadlock, lock wait, lost connection)
    ├── ExecutionFailed             EXECUTION_FAILED      (recorded: a child process died)
    ├── JobTimeout                  TIMEOUT               (recorded: the attempt's timeout)
    ├── InvalidResult               INVALID_RESULT        (recorded: a result not kept)
    ├── FailedByHandler             FAILED_BY_HANDLER     (recorded: the handler raised Fail)
    ├── DependencyFailed            DEPENDENCY_FAILED     (recorded: a dependency ended badly)
    └── LeaseLost                   LEASE_EXPIRED         (recorded: a step unsaved, lease lost)

A caller catches the classes raised to it; the last six are recorded as an attempt's error
(``Job.errors``, ``JobFailed.error``), never raised to a caller, and are exported with the
others (the contract lists every code's class as importable from ``rota``) so that code that
sorts recorded errors can name them. An attempt's error (``Job.errors``) carries the code of
what its handler raised (a ``RotaError``'s own, ``FAILED_BY_HANDLER`` for ``Fail``,
``EXECUTION_FAILED`` for anything else) or of what rota decided: ``TIMEOUT``,
``INVALID_RESULT``, ``LEASE_EXPIRED`` (a rescue's, or ``LeaseLost``) and ``SNOOZE_LIMIT``. ``rota
check`` reports ``JOBS_STRANDED``, ``JOBS_STUCK``, ``SCHEDULE_FAILING``, ``SERVER_READ_ONLY``,
``UNREADABLE_ROW`` and ``DEFINITION_CONFLICT``.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, ClassVar, NoReturn

if TYPE_CHECKING:
    from rota.core.model import AttemptError


class ErrorCode(str, Enum):
    """Every code rota raises or records; ``str(code)`` and ``code == "JOB_NOT_FOUND"`` give the
    stable text, the same in logs, ``rota`` output, the dashboard and stored attempt errors."""

    ROTA_ERROR = "ROTA_ERROR"
    CONFIG_ERROR = "CONFIG_ERROR"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    INVALID_CRON = "INVALID_CRON"
    INVALID_TIMEZONE = "INVALID_TIMEZONE"
    TASK_NOT_REGISTERED = "TASK_NOT_REGISTERED"
    JOB_NOT_FOUND = "JOB_NOT_FOUND"
    SCHEDULE_NOT_FOUND = "SCHEDULE_NOT_FOUND"
    SCHEDULE_CONFLICT = "SCHEDULE_CONFLICT"
    JOB_CANCELLED = "JOB_CANCELLED"
    JOB_FAILED = "JOB_FAILED"
    RESULT_TIMEOUT = "RESULT_TIMEOUT"
    INVALID_RESULT = "INVALID_RESULT"
    WORKER_DIED = "WORKER_DIED"
    STORE_ERROR = "STORE_ERROR"
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    TRANSIENT_STORE_ERROR = "TRANSIENT_STORE_ERROR"
    EXECUTION_FAILED = "EXECUTION_FAILED"
    TIMEOUT = "TIMEOUT"
    FAILED_BY_HANDLER = "FAILED_BY_HANDLER"
    DEPENDENCY_FAILED = "DEPENDENCY_FAILED"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    SNOOZE_LIMIT = "SNOOZE_LIMIT"
    SCHEDULE_FAILING = "SCHEDULE_FAILING"
    JOBS_STRANDED = "JOBS_STRANDED"
    JOBS_STUCK = "JOBS_STUCK"
    SERVER_READ_ONLY = "SERVER_READ_ONLY"
    UNREADABLE_ROW = "UNREADABLE_ROW"
    DEFINITION_CONFLICT = "DEFINITION_CONFLICT"

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__
    """Hash as the plain string, so that a code and its text are one key."""


class RotaError(Exception):
    """Root of every error rota raises; ``code`` is stable across releases."""

    code: ClassVar[ErrorCode] = ErrorCode.ROTA_ERROR


class ConfigError(RotaError, ValueError):
    code = ErrorCode.CONFIG_ERROR


class InvalidArguments(RotaError, ValueError):
    code = ErrorCode.INVALID_ARGUMENTS


class InvalidCron(RotaError, ValueError):
    code = ErrorCode.INVALID_CRON


class InvalidTimezone(RotaError, ValueError):
    code = ErrorCode.INVALID_TIMEZONE


class TaskNotRegistered(RotaError, LookupError):
    code = ErrorCode.TASK_NOT_REGISTERED


class JobNotFound(RotaError, LookupError):
    code = ErrorCode.JOB_NOT_FOUND


class ScheduleNotFound(RotaError, LookupError):
    code = ErrorCode.SCHEDULE_NOT_FOUND


class ScheduleConflict(RotaError):
    """The schedule changed between reading it and writing the edit: nothing was written.
    Read it again and repeat the edit if it still makes sense."""

    code = ErrorCode.SCHEDULE_CONFLICT


class JobCancelled(RotaError):
    code = ErrorCode.JOB_CANCELLED


class JobFailed(RotaError):
    """``rota.result()`` of a job that ended ``failed``; ``error`` is its last attempt's."""

    code = ErrorCode.JOB_FAILED

    def __init__(self, message: str, *, error: AttemptError | None = None) -> None:
        super().__init__(message)
        self.error = error


class ResultTimeout(RotaError, TimeoutError):
    """``rota.result(timeout=...)`` gave up: the job had not ended within the timeout."""

    code = ErrorCode.RESULT_TIMEOUT


class WorkerDied(RotaError):
    """The worker's claim loop ended on its own: ``rota worker`` exits non-zero with it."""

    code = ErrorCode.WORKER_DIED


class StoreError(RotaError):
    code = ErrorCode.STORE_ERROR


class DatabaseUnavailable(StoreError):
    code = ErrorCode.DATABASE_UNAVAILABLE


class TransientStoreError(StoreError):
    """A failure worth retrying as it is: deadlock, lock-wait timeout, dropped connection.

    ``rolled_back`` is true for a deadlock, lock-wait timeout or serialisation failure: in a
    transaction rota began, the whole of it is undone, so even a non-idempotent write may be
    repeated. Inside the caller's own transaction (``queue(connection=...)``) MySQL undoes only
    the statement after a lock-wait timeout, and the caller decides. After a dropped
    connection the commit may or may not have happened.
    """

    code = ErrorCode.TRANSIENT_STORE_ERROR

    def __init__(self, message: str, *, rolled_back: bool = False) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back


class ExecutionFailed(RotaError):
    """An isolated handler's child process died without an outcome.  Recorded as the attempt's
    error, never raised to a caller."""

    code = ErrorCode.EXECUTION_FAILED


class JobTimeout(RotaError):
    """An attempt outlived its task's ``timeout``.  Recorded as the attempt's error, never
    raised to a caller."""

    code = ErrorCode.TIMEOUT


class InvalidResult(RotaError):
    """A handler returned a value that is not JSON or is larger than ``max_result_bytes``, or
    the database refused it.  Recorded as the attempt's error, never raised to a caller."""

    code = ErrorCode.INVALID_RESULT


class FailedByHandler(RotaError):
    """The handler raised ``Fail(message)``: failed at once, not retried.  Recorded as the
    attempt's error, never raised to a caller."""

    code = ErrorCode.FAILED_BY_HANDLER


class DependencyFailed(RotaError):
    """A job this one depends on ended ``failed`` or ``cancelled``, so this one is cancelled.
    Recorded as the job's error, never raised to a caller."""

    code = ErrorCode.DEPENDENCY_FAILED


class LeaseLost(RotaError):
    """A workflow step finished after its job's lease was lost (the job was rescued, cancelled
    or claimed again): its result was not saved, and the attempt ends with this error, whose
    outcome the lease's new holder decides. Recorded, never raised to a caller."""

    code = ErrorCode.LEASE_EXPIRED


def unchained(error: Exception) -> NoReturn:
    """Raise ``error`` with no ``__cause__`` nor ``__context__`` (and ``__suppress_context__``
    set, as ``from None`` sets it), even inside an ``except`` block or a context manager's exit.

    For an error that replaces one whose text may hold a secret (a driver's encoding error
    quotes the password it could not encode): ``raise ... from None`` only hides the original
    from tracebacks, while ``__context__`` still holds it for anyone walking the chain. A bare
    ``raise`` of the error being handled leaves its cleared context as it is.
    """
    try:
        raise error from None
    except Exception as raised:
        raised.__context__ = None
        raise
