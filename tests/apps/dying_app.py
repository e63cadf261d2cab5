"""A Rota application whose worker's claim loop cannot go on, for tests/faults/test_liveness.py.

Its store's ``claim`` and ``outlook`` (the idle claim loop's look) raise ``ClaimLoopBroken``, a
``BaseException`` (not an ``Exception`` a loop backs off from), once ``ROTA_TEST_DIE_AFTER``
of them have run (default 3): the claim loop ends, the worker stops heartbeating and ``rota
worker`` must exit non-zero.  Configured from
the environment as tests/apps/process_app.py is.
"""

from __future__ import annotations

import os
from typing import Any

from rota import JobContext, Rota

app = Rota(
    os.environ["ROTA_TEST_URL"],
    table_prefix=os.environ["ROTA_TEST_PREFIX"],
    lease_seconds=float(os.environ.get("ROTA_TEST_LEASE", "2")),
    poll_interval=float(os.environ.get("ROTA_TEST_POLL", "0.2")),
    connect_timeout=10,
)


class ClaimLoopBroken(BaseException):
    """What no loop backs off from."""


calls_left = int(os.environ.get("ROTA_TEST_DIE_AFTER", "3"))


def breaking(real: Any) -> Any:
    def call(*args: Any) -> Any:
        global calls_left
        if calls_left <= 0:
            raise ClaimLoopBroken("the claim loop cannot go on")
        calls_left -= 1
        return real(*args)

    return call


app.store.jobs.claim = breaking(app.store.jobs.claim)  # type: ignore[method-assign]
app.store.outlook = breaking(app.store.outlook)  # type: ignore[method-assign]


@app.task
def noop(ctx: JobContext) -> None:
    pass
