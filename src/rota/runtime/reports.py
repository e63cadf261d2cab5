"""Writing finished attempts: the worker's only writer of outcomes, one transaction per batch.

A finished attempt waits here, still held under the worker's lease (the heartbeat renews it),
until the batch holding it is written; on stop whatever is left is written before the worker
unregisters, with a bounded number of tries.  Once a batch is written, ``finished`` hears the
ids of its jobs that reached a final state, so that ``rota.result`` waiters of this process
wake at once instead of at their next poll.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rota.core.clock import Clock
from rota.core.transitions import Transition
from rota.runtime.backoff import LoopBackoff
from rota.runtime.progress import ProgressBoard
from rota.runtime.timer import Timer
from rota.store.base import Store

FINAL_REPORT_ATTEMPTS = 8
logger = logging.getLogger("rota.worker")


class Reports:
    def __init__(
        self,
        worker_id: str,
        store: Store,
        db_call: Callable[..., Awaitable[Any]],
        clock: Clock,
        timer: Timer,
        max_backoff: float,
        finished: Callable[[Sequence[int]], None] | None = None,
        written: Callable[[Sequence[Transition]], Awaitable[None]] | None = None,
        progress: ProgressBoard | None = None,
    ) -> None:
        """``finished`` hears the ids of the jobs a batch ended; ``written`` is then awaited
        with the whole batch (the tick alerts count from it). The last ``progress`` a batch's
        attempts posted is written with it."""
        self.worker_id = worker_id
        self.store = store
        self._db = db_call
        self.clock = clock
        self.timer = timer
        self.max_backoff = max_backoff
        self.finished = finished
        self.written = written
        self.progress = progress
        self.pending: list[Transition] = []
        self._writing: Sequence[Transition] = ()
        self._wake = asyncio.Event()
        self._closing = False

    def add(self, transition: Transition) -> None:
        self.pending.append(transition)
        self._wake.set()

    def held(self) -> list[int]:
        """Jobs whose outcome waits to be written or is being written: still ``running`` in
        the table under this worker's lease, though their handlers have ended."""
        return [transition.job_id for transition in (*self._writing, *self.pending)]

    def close(self) -> None:
        """Write what is left, then let ``writing`` end."""
        self._closing = True
        self._wake.set()

    async def writing(self) -> None:
        """The only writer of finished attempts; on stop it writes what is left, then ends."""
        backoff = LoopBackoff("report", self.max_backoff)
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
                if self._closing and backoff.failures >= FINAL_REPORT_ATTEMPTS:
                    logger.error(
                        "giving up reporting %d finished job(s); their leases will expire and "
                        "they will run again",
                        len(self.pending),
                        extra={"event": "worker.report_abandoned"},
                    )
                    return
                await self.timer.sleep(min(delay, 2.0) if self._closing else delay)
                self._wake.set()
                continue
            if self._closing and not self.pending:
                return

    async def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        self._writing = batch
        ended = {transition.job_id for transition in batch}
        progress = self.progress.take_ended(ended) if self.progress is not None else []
        try:
            applied = await self._db(
                self.store.complete, self.worker_id, batch, self.clock.now(), progress
            )
        except BaseException:
            self.pending[:0] = batch
            if self.progress is not None:
                self.progress.put_back(progress)
            raise
        finally:
            self._writing = ()
        if self.finished is not None:
            self.finished([transition.job_id for transition in batch if transition.finishes])
        if self.written is not None:
            await self.written(batch)
        if applied < len(batch):
            logger.warning(
                "%d of %d finished jobs were no longer held by this worker (lease expired?)",
                len(batch) - applied,
                len(batch),
                extra={"event": "worker.lost_jobs"},
            )
