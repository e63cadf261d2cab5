"""Handlers that tests/faults/test_isolation.py runs with ``isolation="process"``.

They are module-level functions, so a child process can import them by name.  Each one that
takes ``marks`` appends ``<job id> <attempt> <pid> <what>`` to that file with one ``write`` on
an ``O_APPEND`` descriptor, so a line survives the SIGKILL of its process.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from typing import Any

from rota import JobContext

MEMORY_LIMIT = 512 * 1024 * 1024
"""The address space an attempt of ``blow_up`` may use; it then asks for four times that."""


def mark(ctx: JobContext, marks: str, what: str) -> None:
    descriptor = os.open(marks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, f"{ctx.job_id} {ctx.attempt} {os.getpid()} {what}\n".encode())
    finally:
        os.close(descriptor)


def exit_3(ctx: JobContext) -> None:
    os._exit(3)


def segfault(ctx: JobContext) -> None:
    ctypes.string_at(0)


def blow_up(ctx: JobContext) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    hog = bytearray(4 * MEMORY_LIMIT)
    hog[-1] = 1


def raises(ctx: JobContext, message: str) -> None:
    raise LookupError(message)


def echo(ctx: JobContext, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {
        "args": list(args),
        "kwargs": kwargs,
        "job_id": ctx.job_id,
        "task": ctx.task,
        "queue": ctx.queue,
        "attempt": ctx.attempt,
        "scheduled_at": ctx.scheduled_at.isoformat() if ctx.scheduled_at else None,
        "manual": ctx.manual,
        "pid": os.getpid(),
    }


def unencodable(ctx: JobContext) -> object:
    return object()


def no_context() -> int:
    return 42


def stubborn(ctx: JobContext, marks: str, seconds: float) -> None:
    """The first time it runs a job, ignore SIGTERM and sleep, so only SIGKILL stops it; the
    next time, record whether a process of an earlier run is still alive (two runs would
    overlap), and finish at once (a release at shutdown gives the attempt back: ``ctx.attempt``
    is the same again)."""
    earlier = []
    if os.path.exists(marks):
        with open(marks) as lines:
            earlier = [int(line.split()[2]) for line in lines if line.split()[3] == "start"]
    mark(ctx, marks, "start")
    if not earlier:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(seconds)
    else:
        mark(ctx, marks, f"earlier alive={any(alive(pid) for pid in earlier)}")
    mark(ctx, marks, "end")


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a handler checks an earlier run's; so do the tests)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def polite(ctx: JobContext, marks: str, seconds: float) -> None:
    """Sleep until stopped; record that SIGTERM set ``ctx.cancelled`` and ran ``finally``."""
    mark(ctx, marks, "start")
    try:
        time.sleep(seconds)
    finally:
        mark(ctx, marks, f"finally cancelled={bool(ctx.cancelled)}")


def quick(ctx: JobContext, marks: str) -> None:
    mark(ctx, marks, "quick")
