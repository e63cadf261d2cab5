"""Running a host until SIGINT or SIGTERM (``Rota.run()``, ``rota worker``).

The database is waited for for as long as it takes, unless a signal comes first; then the
worker runs until a signal, or until it dies (``WorkerDied`` once it has stopped).  The first
signal stops it gracefully; a second ends the grace at once through the worker's own
grace-expiry path, so an interrupted job ends the same either way.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from rota.core.events import EventName
from rota.errors import WorkerDied
from rota.runtime.host.process import Host, Served
from rota.runtime.worker import Worker

SIGNALS = (signal.SIGINT, signal.SIGTERM)
logger = logging.getLogger("rota")


async def run_until_signalled(host: Host, grace: float, served: Served) -> None:
    stop = asyncio.Event()
    draining: Worker | None = None

    def on_signal() -> None:
        if stop.is_set() and draining is not None:
            host.events.log(
                logger,
                EventName.WORKER_GRACE_SKIPPED,
                logging.WARNING,
                "stopping now: interrupting running jobs without waiting for them",
            )
            draining.end_grace()
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in SIGNALS:
        loop.add_signal_handler(sig, on_signal)
    starting = asyncio.create_task(host.start(None, served))
    stopping = asyncio.create_task(stop.wait())
    died: asyncio.Task[bool] | None = None
    try:
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()
            assert host.worker is not None
            died = asyncio.create_task(host.worker.dead.wait())
            await asyncio.wait({stopping, died}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waits = (starting, stopping, *([died] if died else []))
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        draining = host.worker
        await host.stop(grace, signalled=True)
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)
    if died is not None and died.done() and not died.cancelled():
        raise WorkerDied("the claim loop ended; see the log for why")
