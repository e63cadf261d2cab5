"""Completing attempts: the worker's only writer of outcomes, one transaction per batch.

A finished attempt waits here, still held under the worker's lease (the heartbeat renews it),
until the batch holding it is written; on stop whatever is left is written before the worker
unregisters, with a bounded number of tries.  Once a batch has committed, the attempts that
applied, and only they, are announced (``runtime.announcer``: events and hooks, telemetry,
``rota.result`` waiters), counted for tick alerts (``runtime.alerts``) and for ``drain``.

A write that fails is never repeated as it was, so that one batch cannot wedge the reporting of
every later one. A batch the database refuses (``StatementTooLarge``: larger than MySQL's
``max_allowed_packet``; ``InvalidArguments``: a value it will not store) is halved at once. A
lost connection halves it too: at once if the database takes a small write meanwhile (the
server cut off an over-large statement, as MariaDB does one far over its limit), after the
usual back-off if not (it is down or read-only; smaller batches cost nothing then). Each batch
written doubles the size allowed again. One job that cannot be written even alone does not hold
back the others: a success whose result is refused fails instead (``INVALID_RESULT``, not
retried, as a result over ``max_result_bytes`` does), any other outcome is given up, logged,
and its job left to lease expiry and a rescue. Alone, a job whose write loses the connection
while the database takes other writes is struck and sent after the others; at ``STRIKES`` it is
taken as refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rota.core.clock import Clock
from rota.core.events import EventName
from rota.core.model import JobState
from rota.core.transitions import Transition, unwritable
from rota.errors import InvalidArguments, StoreError, TransientStoreError
from rota.runtime.announcer import Announcer
from rota.runtime.timer import Timer
from rota.runtime.worker.alerts import TickAlerts
from rota.runtime.worker.backoff import LoopBackoff
from rota.runtime.worker.executor import Attempt
from rota.runtime.worker.leases import Holdings
from rota.runtime.worker.progress import ProgressBoard
from rota.store.base import StatementTooLarge, Store
from rota.store.values import Applied

FINAL_REPORT_ATTEMPTS = 8
STRIKES = 3
"""Lost connections of a job's write alone, the database taking other writes in between,
before that write is taken as refused."""
logger = logging.getLogger("rota.worker")


class Completer:
    def __init__(
        self,
        worker_id: str,
        store: Store,
        db_call: Callable[..., Awaitable[Any]],
        clock: Clock,
        timer: Timer,
        max_backoff: float,
        announcer: Announcer,
        holdings: Holdings,
        alerts: TickAlerts | None = None,
        progress: ProgressBoard | None = None,
    ) -> None:
        """Each batch written is announced by ``announcer``, its ticks counted by ``alerts``,
        and its jobs leave ``holdings`` (no lease of theirs to renew any more); the last
        ``progress`` a batch's attempts posted is written with it."""
        self.worker_id = worker_id
        self.store = store
        self._db = db_call
        self.clock = clock
        self.timer = timer
        self.max_backoff = max_backoff
        self.announcer = announcer
        self.events = announcer.events
        self.holdings = holdings
        self.alerts = alerts
        self.progress = progress
        self.pending: list[Transition] = []
        self.outcomes: Counter[JobState] = Counter()
        """Where the attempts written and applied went, for ``drain``'s result."""
        self._attempts: dict[int, Attempt] = {}
        self._writing: Sequence[Transition] = ()
        self._batch: int | None = None
        """The most outcomes the next batch may hold (``None``: all), halved by failures."""
        self._strikes: Counter[int] = Counter()
        self._wake = asyncio.Event()
        self._closing = False

    def add(self, attempt: Attempt) -> None:
        """Write ``attempt``'s transition, then announce it."""
        self.pending.append(attempt.transition)
        self._attempts[attempt.job.id] = attempt
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
        backoff = LoopBackoff("report", self.max_backoff, self.events)
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
                if self._closing and backoff.failures >= FINAL_REPORT_ATTEMPTS:
                    self.events.log(
                        logger,
                        EventName.WORKER_REPORT_ABANDONED,
                        logging.ERROR,
                        "giving up reporting %d finished job(s); their leases will expire and "
                        "they will run again",
                        len(self.pending),
                    )
                    return
                await self.timer.sleep(min(delay, 2.0) if self._closing else delay)
                self._wake.set()
                continue
            if self._closing and not self.pending:
                return

    async def flush(self) -> None:
        """Write every pending outcome, in batches the database takes; raise when a write
        fails for another reason than its size (the database is down, say: back off)."""
        while self.pending:
            await self._write(self._next_batch())
        self._batch = None

    def _next_batch(self) -> list[Transition]:
        """The first outcomes, up to the batch size and before any struck job's, which goes
        alone."""
        batch: list[Transition] = []
        for transition in self.pending[: self._batch or len(self.pending)]:
            if self._strikes[transition.job_id]:
                return batch or [transition]
            batch.append(transition)
        return batch

    async def _write(self, batch: list[Transition]) -> None:
        self.pending = self.pending[len(batch) :]
        self._writing = batch
        ended = {transition.job_id for transition in batch}
        progress = self.progress.take_ended(ended) if self.progress is not None else []
        try:
            applied = await self._db(
                self.store.jobs.complete, self.worker_id, batch, self.clock.now(), progress
            )
        except BaseException as error:
            self.pending[:0] = batch
            if self.progress is not None:
                self.progress.put_back(progress)
            if isinstance(error, (StatementTooLarge, InvalidArguments)):
                self._refused(batch, error)
                return
            if isinstance(error, TransientStoreError) and await self._lost(batch, error):
                return
            raise
        finally:
            self._writing = ()
        written = []
        for transition in batch:
            self._strikes.pop(transition.job_id, None)
            attempt = self._attempts.pop(transition.job_id)
            attempt.transition = transition  # ``_give_up`` may have replaced the decided one
            written.append(attempt)
        self.holdings.discard(transition.job_id for transition in batch)
        if self._batch is not None:
            self._batch *= 2
        await self._announce(written, applied)

    def _refused(
        self, batch: list[Transition], error: StatementTooLarge | InvalidArguments
    ) -> None:
        """Give up the jobs the store named as too large, or halve the batch, or give up its
        one job."""
        named = error.job_ids if isinstance(error, StatementTooLarge) else ()
        too_large = [transition for transition in batch if transition.job_id in named]
        if too_large:
            for transition in too_large:
                self._give_up(transition, error)
        elif len(batch) > 1:
            self._halve(batch, error)
        else:
            self._give_up(batch[0], error)

    async def _lost(self, batch: list[Transition], error: TransientStoreError) -> bool:
        """A write that lost the connection: when the database takes a small write meanwhile
        (this worker's heartbeat row), the write itself is the likely cause (a server cutting
        off an over-large statement), so the batch is halved, or its one job struck and sent
        after the others, and the writing goes on at once; when it takes none, the database
        is down or read-only (a failover): the batch is halved all the same and the writer
        backs off, striking nothing.  Whether to go on at once.  A deadlock or lock-wait
        timeout (``rolled_back``, already repeated by the store) is neither."""
        if error.rolled_back:
            return False
        try:
            now = self.clock.now()
            await self._db(self.store.jobs.heartbeat, self.worker_id, [], now, now)
        except StoreError:
            writable = False
        else:
            writable = True
        if len(batch) > 1:
            self._halve(batch, error)
            return writable
        if not writable:
            return False
        (transition,) = batch
        self._strikes[transition.job_id] += 1
        if self._strikes[transition.job_id] >= STRIKES:
            self._give_up(transition, error)
        else:
            self.pending.remove(transition)
            self.pending.append(transition)  # after the others, which it must not hold back
        return True

    def _halve(self, batch: list[Transition], error: Exception) -> None:
        self._batch = (len(batch) + 1) // 2
        self.events.log(
            logger,
            EventName.WORKER_REPORT_SPLIT,
            logging.WARNING,
            "writing %d finished jobs failed (%s: %s); writing them in batches of %d",
            len(batch),
            type(error).__name__,
            error,
            self._batch,
        )

    def _give_up(self, transition: Transition, error: Exception) -> None:
        """Write ``transition``'s job failed instead when it carries a result (the failure,
        small, takes its place), or let its lease expire."""
        index = self.pending.index(transition)
        self._strikes.pop(transition.job_id, None)
        attempt = self._attempts.get(transition.job_id)
        job = attempt.job if attempt is not None else None
        if job is not None and transition.target is JobState.SUCCEEDED and transition.result:
            size = len(transition.result.encode("utf-8", "surrogatepass"))
            message = f"the result ({size} bytes as JSON) could not be written: {error}"
            self.pending[index] = unwritable(job, transition, message)
            self.events.log(
                logger,
                EventName.WORKER_RESULT_UNWRITABLE,
                logging.ERROR,
                "job %d succeeded but the database refuses its result; it fails with "
                "INVALID_RESULT instead: %s",
                transition.job_id,
                message,
                job_id=transition.job_id,
            )
            return
        del self.pending[index]
        self._attempts.pop(transition.job_id, None)
        self.holdings.discard([transition.job_id])
        self.events.log(
            logger,
            EventName.WORKER_REPORT_DROPPED,
            logging.ERROR,
            "giving up writing the outcome of job %d (%s: %s); its lease will expire and it "
            "will run again",
            transition.job_id,
            type(error).__name__,
            error,
            job_id=transition.job_id,
        )

    async def _announce(self, written: Sequence[Attempt], applied: Applied) -> None:
        done = self.announcer.attempts(written, applied)
        for attempt in done:
            self.outcomes[attempt.transition.target] += 1
        if self.alerts is not None:
            ticks = self.alerts.ticks((attempt.job, attempt.transition) for attempt in done)
            if ticks:
                await self._db(self.alerts.record, ticks)
