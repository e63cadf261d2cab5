"""Draining: every due job run in the calling process, as a worker of it would (``Rota.drain``).

The code's schedules are synced and the ticks due at the clock's now enqueued first, as
``start()`` would; then a worker without registration or polling runs the due jobs until none
is left (``Worker.drain``).  Tests and scripts use it instead of sleeping.
"""

from __future__ import annotations

import asyncio

from rota.core.model import DrainResult
from rota.runtime.host.process import Host, Served, scheduler_settings
from rota.runtime.worker import Worker
from rota.runtime.worker.scheduler import fire_due
from rota.runtime.worker.settings import Pool
from rota.runtime.worker.threads import HandlerThreads


async def drain(host: Host, queue: str | None) -> DrainResult:
    await asyncio.to_thread(host.readiness.ensure_ready)
    if host.worker is None:
        host.events.bind(asyncio.get_running_loop())
    await asyncio.to_thread(host.sync_code)
    settings = scheduler_settings(host.config)
    store, registry, clock, events = host.common
    await asyncio.to_thread(fire_due, store.schedules, registry, settings, events, clock.now())
    concurrency = host.config.concurrency
    pools = (Pool((queue,), concurrency),) if queue else host.pools(Served())
    worker_settings = host.worker_settings(pools)
    threads = HandlerThreads(worker_settings.concurrency, "rota-drain")
    try:
        executor = host.executor(threads)
        worker = Worker(host.context(executor, worker_settings, asyncio.to_thread))
        return await worker.drain()
    finally:
        threads.shutdown()
