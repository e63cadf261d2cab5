"""A handler that tests/test_progress.py runs with ``isolation="process"``: module-level, so a
child process can import it by name."""

from __future__ import annotations

import time
from pathlib import Path

from rota import JobContext


def reports_then_waits(ctx: JobContext, release: str) -> None:
    """Report progress 1,000 times, then wait (10 s at most) for the test to create
    ``release`` once it has seen the last value in the database."""
    for done in range(1, 1001):
        ctx.progress(done / 1000, f"{done} of 1000 <rows>")
    deadline = time.monotonic() + 10
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
