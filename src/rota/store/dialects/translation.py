"""Driver errors as rota's, at the store's edge, with the connection's secrets kept out of them.

A translated error keeps the driver's text (``Access denied for user ...``, ``password
authentication failed ...``) with the URL's secrets hidden.  Whether it chains the driver's
error depends on where that error came from: one of a statement is chained, for its traceback
and SQL; one raised with no statement (connecting, and beginning or committing a transaction,
which may connect too) is not, since the frames of a connection attempt hold the connection's
parameters, password included (SQLAlchemy's ``cparams``, psycopg's ``conninfo`` and its
``PGconn``), and whatever walks an error's chain and frames (Sentry, a debug page) would show
them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from sqlalchemy import exc as sa_exc

from rota.errors import RotaError, unchained


class ConnectFailure(Exception):
    """Carries the error a connection attempt ended with (``Dialect.connect``) past
    SQLAlchemy's pool to ``Translation``, which raises it afresh: raised where it was made, it
    would pass through the pool's frames, which hold the connection's parameters."""

    def __init__(self, error: RotaError) -> None:
        super().__init__(str(error))
        self.error = error


class Translation:
    """The context manager of ``Dialect.translate_errors``.

    An ``__exit__`` method rather than ``contextlib.contextmanager``: a generator's manager
    keeps the error thrown into it in a local of its ``__exit__`` frame, which the new error's
    traceback holds, so the driver's error (and its frames) would stay one step away however
    the new one was raised.
    """

    def __init__(
        self,
        translated: Callable[[sa_exc.DBAPIError, str], RotaError],
        hide_secrets: Callable[[str], str],
    ) -> None:
        self.translated = translated
        self.hide_secrets = hide_secrets

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, ConnectFailure):
            translated, chained = error.error, False
        elif isinstance(error, sa_exc.DBAPIError):
            translated, chained = self.translate(error)
        else:
            return
        if chained:
            raise translated from error
        del error, traceback
        unchained(translated)

    def translate(self, error: sa_exc.DBAPIError) -> tuple[RotaError, bool]:
        """The error to raise, and whether it may chain ``error``: only a statement's, and
        only when neither its text nor the driver's held a secret."""
        shown = f"{type(error.orig).__name__}: {error.orig}"
        hidden = self.hide_secrets(shown)
        clean = hidden == shown and self.hide_secrets(str(error)) == str(error)
        return self.translated(error, hidden), clean and error.statement is not None
