"""A service whose user code blocks: an async handler that never yields, and a hook that sleeps.

``rota worker tests.apps.blocking_app:app`` is started by tests/faults/test_blocking.py, with
the environment of tests/apps/environment.py.  Marks as tests/apps/process_app.py writes them
(``<dir>/<job>.<attempt>.<event>``); ``ROTA_TEST_SLOW_HOOK`` seconds makes a ``job.started``
hook sleep that long.
"""

from __future__ import annotations

import os
import time

from rota import JobContext
from rota.observe.events import Event
from tests.apps.environment import rota_from_environment
from tests.apps.process_app import mark

app = rota_from_environment(concurrency=2)


@app.task(retries=3, retry_delay=0)
async def block_the_loop(ctx: JobContext, seconds: float) -> None:
    """Holds the worker's event loop for ``seconds`` (no await): claims, reports, the old
    heartbeat all wait."""
    mark(ctx, "started")
    time.sleep(seconds)  # noqa: ASYNC251  the point: a handler that blocks its event loop
    mark(ctx, "finished")


@app.task(retries=3, retry_delay=0)
def quick(ctx: JobContext) -> None:
    mark(ctx, "started")
    mark(ctx, "finished")


def slow_hook(event: Event) -> None:
    time.sleep(float(os.environ["ROTA_TEST_SLOW_HOOK"]))


if os.environ.get("ROTA_TEST_SLOW_HOOK"):
    app.on("job.started", slow_hook)
