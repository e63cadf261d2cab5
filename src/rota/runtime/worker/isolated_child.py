"""The child process of an isolated attempt (``isolation``): its whole life, from the spec the
worker sends to the outcome it writes back, and how an exception crosses as a JSON record.

Its ``JobContext`` reports progress over one pipe and, for ``ctx.step``, ``ctx.sleep`` and
``ctx.wait_for``, talks to the worker's journal over another (``isolated_steps``): the step's
function runs here, its result is saved there.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import signal
import sys
import threading
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

from rota.context import JobContext
from rota.core.backoff import lineage
from rota.core.failures import message_of, traceback_of
from rota.errors import InvalidResult, RotaError
from rota.outcomes import Fail, Retry, Snooze
from rota.runtime.services import results
from rota.runtime.worker.isolated_steps import JournalClient
from rota.runtime.worker.journal import Parked
from rota.runtime.worker.progress import child_reporter

SIGNALS: dict[str, type[Exception]] = {
    "retry": Retry,
    "snooze": Snooze,
    "fail": Fail,
    "invalid_result": InvalidResult,
}
"""What crosses back from the child as itself, by the name its record gives."""


class Terminated(BaseException):
    """Raised in an isolated handler when the worker stops its attempt (SIGTERM)."""


def child_main(
    spec: str,
    output: Connection,
    lifeline: Connection,
    progress: Connection,
    journal: Connection,
) -> None:
    """The child's whole life: run the handler once, write the outcome as JSON, exit."""
    threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True).start()
    data = json.loads(spec)
    scheduled = data["scheduled_at"]
    ctx = JobContext(
        job_id=data["job_id"],
        task=data["task"],
        queue=data["queue"],
        attempt=data["attempt"],
        scheduled_at=datetime.fromisoformat(scheduled) if scheduled else None,
        manual=data["manual"],
        batch=data["batch"],
        logger=logging.LoggerAdapter(
            logging.getLogger(f"rota.task.{data['task']}"),
            {"job_id": data["job_id"], "task": data["task"], "attempt": data["attempt"]},
        ),
        on_progress=child_reporter(progress),
        workflow=JournalClient(journal, data["max_result_bytes"]),
    )

    def terminated(signum: int, frame: object) -> None:
        ctx.cancelled.set()
        raise Terminated("the attempt was stopped (timeout, cancel or shutdown): SIGTERM")

    signal.signal(signal.SIGTERM, terminated)
    try:
        handler = _resolve(data["module"], data["qualname"])
        arguments = (ctx, *data["args"]) if data["context"] else ()
        result = handler(*arguments, **(data["kwargs"] if data["context"] else {}))
        text = json.dumps({"result": results.encode(result, data["max_result_bytes"])})
    except BaseException as exc:
        text = json.dumps({"error": record(exc)})
    _write(output.fileno(), text.encode())
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)  # neither wait for threads the handler left nor run the parent's atexit hooks


def record(exc: BaseException) -> dict[str, Any]:
    """``exc`` as JSON for the worker, which rebuilds it (``isolation``)."""
    kind = type(exc)
    entry: dict[str, Any] = {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "message": message_of(exc),
        "traceback": traceback_of(exc),
        "code": exc.code if isinstance(exc, RotaError) else "",
        # The script a worker runs is ``__mp_main__`` here: its classes match ``__main__``'s.
        "lineage": [name.replace("__mp_main__.", "__main__.", 1) for name in lineage(exc)],
    }
    signal_ = next((name for name, kind in SIGNALS.items() if isinstance(exc, kind)), None)
    if signal_ is not None:
        entry["signal"] = signal_
    if isinstance(exc, (Retry, Snooze)):
        entry["delay"] = exc.delay
    elif isinstance(exc, Fail):
        entry["message"] = exc.message
    elif isinstance(exc, Parked):
        entry.update(signal="parked", until=exc.until.isoformat(), waiting_for=exc.signal)
    return entry


def _resolve(module: str, qualname: str) -> Any:
    target: Any = (
        sys.modules["__main__"] if module == "__main__" else importlib.import_module(module)
    )
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exit_with_parent(lifeline: Connection) -> None:
    """End the child when the worker dies (its end of the lifeline closes): no orphan runs on."""
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()
    os._exit(70)
