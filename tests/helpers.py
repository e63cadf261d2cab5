"""Waiting on observable state instead of sleeping for a guessed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def eventually(
    check: Callable[[], object], timeout: float = 10.0, every: float = 0.02
) -> None:
    """Return once ``check()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        await asyncio.sleep(every)


def wait_until(check: Callable[[], object], timeout: float = 10.0, every: float = 0.05) -> None:
    """``eventually`` for code outside an event loop (subprocess tests)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        time.sleep(every)
