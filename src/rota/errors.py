"""Typed errors, each with a stable ``code`` that logs, the CLI and the dashboard can rely on.

::

    RotaError
    ├── ConfigError                 CONFIG_ERROR          (also ValueError)
    ├── InvalidArguments            INVALID_ARGUMENTS     (also ValueError)
    ├── InvalidCron                 INVALID_CRON          (also ValueError)
    ├── InvalidTimezone             INVALID_TIMEZONE      (also ValueError)
    ├── TaskNotRegistered           TASK_NOT_REGISTERED   (also LookupError)
    ├── JobNotFound                 JOB_NOT_FOUND         (also LookupError)
    ├── ScheduleNotFound            SCHEDULE_NOT_FOUND    (also LookupError)
    ├── ScheduleConflict            SCHEDULE_CONFLICT     (an edit lost a compare-and-set)
    ├── ExecutionFailed             EXECUTION_FAILED
    ├── JobTimeout                  TIMEOUT
    ├── JobCancelled                JOB_CANCELLED
    ├── JobFailed                   JOB_FAILED            (rota.result of a failed job)
    ├── ResultTimeout               RESULT_TIMEOUT        (also TimeoutError)
    ├── InvalidResult               INVALID_RESULT
    ├── DependencyFailed            DEPENDENCY_FAILED
    ├── FailedByHandler             FAILED_BY_HANDLER
    ├── WorkerDied                  WORKER_DIED
    └── StoreError                  STORE_ERROR
        ├── DatabaseUnavailable     DATABASE_UNAVAILABLE
        └── TransientStoreError     TRANSIENT_STORE_ERROR (deadlock, lock wait, lost connection)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rota.core.model import AttemptError


class RotaError(Exception):
    """Root of every error rota raises; ``code`` is stable across releases."""

    code = "ROTA_ERROR"


class ConfigError(RotaError, ValueError):
    code = "CONFIG_ERROR"


class InvalidArguments(RotaError, ValueError):
    code = "INVALID_ARGUMENTS"


class InvalidCron(RotaError, ValueError):
    code = "INVALID_CRON"


class InvalidTimezone(RotaError, ValueError):
    code = "INVALID_TIMEZONE"


class TaskNotRegistered(RotaError, LookupError):
    code = "TASK_NOT_REGISTERED"


class JobNotFound(RotaError, LookupError):
    code = "JOB_NOT_FOUND"


class ScheduleNotFound(RotaError, LookupError):
    code = "SCHEDULE_NOT_FOUND"


class ScheduleConflict(RotaError):
    """The schedule changed between reading it and writing the edit: nothing was written.
    Read it again and repeat the edit if it still makes sense."""

    code = "SCHEDULE_CONFLICT"


class ExecutionFailed(RotaError):
    code = "EXECUTION_FAILED"


class JobTimeout(RotaError):
    code = "TIMEOUT"


class JobCancelled(RotaError):
    code = "JOB_CANCELLED"


class JobFailed(RotaError):
    """``rota.result()`` of a job that ended ``failed``; ``error`` is its last attempt's."""

    code = "JOB_FAILED"

    def __init__(self, message: str, *, error: AttemptError | None = None) -> None:
        super().__init__(message)
        self.error = error


class ResultTimeout(RotaError, TimeoutError):
    """``rota.result(timeout=...)`` gave up: the job had not ended within the timeout."""

    code = "RESULT_TIMEOUT"


class InvalidResult(RotaError):
    """A handler returned a value that is not JSON or is larger than ``max_result_bytes``."""

    code = "INVALID_RESULT"


class DependencyFailed(RotaError):
    """A job this one depends on ended ``failed`` or ``cancelled``, so this one is cancelled."""

    code = "DEPENDENCY_FAILED"


class FailedByHandler(RotaError):
    """The handler raised ``Fail(message)``: failed at once, not retried."""

    code = "FAILED_BY_HANDLER"


class WorkerDied(RotaError):
    """The worker's claim loop ended on its own: ``rota worker`` exits non-zero with it."""

    code = "WORKER_DIED"


class StoreError(RotaError):
    code = "STORE_ERROR"


class DatabaseUnavailable(StoreError):
    code = "DATABASE_UNAVAILABLE"


class TransientStoreError(StoreError):
    """A failure worth retrying as it is: deadlock, lock-wait timeout, dropped connection.

    ``rolled_back`` is true for a deadlock, lock-wait timeout or serialisation failure: in a
    transaction rota began, the whole of it is undone, so even a non-idempotent write may be
    repeated. Inside the caller's own transaction (``queue(connection=...)``) MySQL undoes only
    the statement after a lock-wait timeout, and the caller decides. After a dropped
    connection the commit may or may not have happened.
    """

    code = "TRANSIENT_STORE_ERROR"

    def __init__(self, message: str, *, rolled_back: bool = False) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back


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
