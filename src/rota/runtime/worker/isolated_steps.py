"""Workflow steps in a process-isolated handler: the step's function runs in the child, the
journal that saves it stays in the worker.

The child's context holds a ``JournalClient``, which sends each ``step``, ``sleep`` and
``wait_for`` over a pipe of its own to the worker's ``JournalServer``; that thread hands it to
the attempt's ``Journal``. A step not saved yet is run by asking the child (``run``), which
calls the function and sends back its JSON; the journal saves it, fenced by the lease, and the
child's ``step`` returns the value as saved. A park (``Parked``) and rota's errors cross back
and are raised in the child, where the handler sees them as in a thread.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

from rota.errors import (
    ConfigError,
    DatabaseUnavailable,
    InvalidArguments,
    InvalidResult,
    LeaseLost,
    RotaError,
    StoreError,
    TransientStoreError,
)
from rota.runtime.services import results
from rota.runtime.worker.journal import Journal, Parked, called

ERRORS: dict[str, type[RotaError]] = {
    kind.__name__: kind
    for kind in (
        ConfigError,
        DatabaseUnavailable,
        InvalidArguments,
        InvalidResult,
        LeaseLost,
        StoreError,
        TransientStoreError,
    )
}
"""The errors of the worker's journal that are raised again, as themselves, in the child."""


class _ChildRaised(Exception):
    """The step's function raised in the child, which raises it there itself."""


class JournalServer:
    """Answers a child's journal calls from a thread of the worker, until the child is gone."""

    def __init__(self, connection: Connection, journal: Journal) -> None:
        self.connection = connection
        self.journal = journal
        self.thread = threading.Thread(target=self._serve, name="rota-isolated-steps", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(EOFError, OSError):
            while True:
                self._answer(self.connection.recv())

    def _answer(self, request: tuple[Any, ...]) -> None:
        kind, *arguments = request
        calls: dict[str, Callable[..., Any]] = {
            "step": lambda name: self.journal.step(name, self._run_in_child, (), {}),
            "sleep": self.journal.sleep,
            "wait_for": self.journal.wait_for,
        }
        try:
            value = calls[kind](*arguments)
        except _ChildRaised:
            return
        except Parked as parked:
            self.connection.send(("parked", parked.until.isoformat(), parked.signal))
            return
        except Exception as error:
            name = type(error).__name__ if type(error).__name__ in ERRORS else "StoreError"
            self.connection.send(("error", name, str(error)))
            return
        self.connection.send(("value", None if value is None else json.dumps(value)))

    def _run_in_child(self) -> Any:
        self.connection.send(("run",))
        reply = self.connection.recv()
        if reply[0] != "ran":
            raise _ChildRaised
        return None if reply[1] is None else json.loads(reply[1])


class JournalClient:
    """The child's side: a ``Workflow`` (``rota.context``) over the pipe to the worker."""

    def __init__(self, connection: Connection, max_result_bytes: int) -> None:
        self.connection = connection
        self.max_result_bytes = max_result_bytes
        self._in_step = False
        """While a step's function runs: the worker waits for its result, not for a call."""

    def step(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        self._outside_a_step("step")
        self.connection.send(("step", name))
        while (reply := self.connection.recv())[0] == "run":
            try:
                self._in_step = True
                try:
                    value = called(fn, args, kwargs)
                finally:
                    self._in_step = False
                encoded = results.encode(value, self.max_result_bytes)
            except InvalidResult as error:
                self.connection.send(("raised",))
                raise InvalidResult(f"step {name!r}: {error}") from None
            except BaseException:
                self.connection.send(("raised",))
                raise
            self.connection.send(("ran", encoded))
        return _answered(reply)

    def sleep(self, name: str, duration: float | timedelta) -> Any:
        self._outside_a_step("sleep")
        self.connection.send(("sleep", name, duration))
        return _answered(self.connection.recv())

    def wait_for(self, signal: str, timeout: float | timedelta | None) -> Any:
        self._outside_a_step("wait_for")
        self.connection.send(("wait_for", signal, timeout))
        return _answered(self.connection.recv())

    def _outside_a_step(self, call: str) -> None:
        if self._in_step:
            raise InvalidArguments(
                f"ctx.{call} inside a step's function: in an isolated handler, steps do not nest"
            )


def _answered(reply: tuple[Any, ...]) -> Any:
    kind, *rest = reply
    if kind == "parked":
        until, signal = rest
        raise Parked(datetime.fromisoformat(until), signal)
    if kind == "error":
        name, message = rest
        raise ERRORS[name](message)
    return None if rest[0] is None else json.loads(rest[0])
