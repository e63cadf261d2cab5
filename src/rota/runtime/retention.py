"""Retention: how long finished jobs are kept, and their pruning.

Only the holder of the short ``prune`` lease prunes, so replicas take turns instead of
deleting side by side.  Each batch is its own short transaction, so no lock is held for long,
and a worker's pass waits after each batch in proportion to the batch's own time, so the
claims of every worker keep most of the database while a large backlog (a million jobs
coming of age at once) is deleted.  A pass ends when nothing is past retention or once half of
its lease is spent; one that ends with a backlog left is followed at once by the next, which
renews the lease, so the prune keeps up with any backlog instead of a pass's worth a minute.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rota.config import RotaConfig
from rota.core.clock import Clock
from rota.core.model import FOLD_LAG, JobState
from rota.runtime.timer import Timer
from rota.store.base import Store

PRUNE_LEASE = "prune"
DbCall = Callable[..., Awaitable[Any]]
"""Runs a store call off the event loop (the worker's database threads)."""


@dataclass(frozen=True)
class Retention:
    succeeded: timedelta = RotaConfig.succeeded_retention
    failed: timedelta = RotaConfig.failed_retention
    """Also how long cancelled jobs and schedules' history entries are kept."""
    workers: timedelta = timedelta(hours=1)
    """How long the row of a worker that stopped heartbeating is kept (listed as dead)."""
    limits: timedelta = timedelta(days=1)
    """How long a flow-limit key's row is kept after it was last written."""
    batch: int = 500
    """Rows deleted per transaction: few enough that one holds its locks briefly."""
    pause: float = 2.0
    """After each batch a worker's pass waits this many times as long as the batch took: a
    busier database, whose batches take longer, is left more time for the claims."""
    pace: float = 10_000.0
    """Jobs a second a pass deletes at least, its pauses cut short as needed, so a million
    coming of age at once go within two minutes (``bench/prune.py``)."""


class PrunePass:
    """The deletions of one pass, a batch a ``step``: succeeded jobs past their retention, then
    failed and cancelled ones, then schedule history entries older than the failed jobs'
    retention, each oldest first, then batches as old whose jobs are all gone.  ``jobs``
    counts the jobs deleted so far."""

    def __init__(self, store: Store, retention: Retention, now: datetime) -> None:
        self.store = store
        self.batch = retention.batch
        self.pause = retention.pause
        self.pace = retention.pace
        self.groups = deque(
            [
                ((JobState.SUCCEEDED,), now - retention.succeeded),
                ((JobState.FAILED, JobState.CANCELLED), now - retention.failed),
            ]
        )
        self.after: datetime | None = None
        """Where the group's next batch starts: past the jobs deleted, whose index entries
        linger."""
        self.history: datetime | None = now - retention.failed
        self.batches: datetime | None = now - retention.failed
        self.jobs = 0

    def step(self) -> int | None:
        """Delete the next batch; how many jobs (0: history entries or batches), ``None``
        once none is left.  A group is done with the batch that reaches its cutoff, so a pass
        with nothing to delete costs one transaction a group."""
        while self.groups:
            states, before = self.groups[0]
            pruned = self.store.finished.prune(states, before, self.batch, self.after)
            self.after = pruned.through
            if pruned.through is None:
                self.groups.popleft()
            if pruned.jobs:
                self.jobs += pruned.jobs
                return pruned.jobs
        if self.history is not None:
            if self.store.schedules.prune_history(self.history, self.batch) < self.batch:
                self.history = None
            return 0
        if self.batches is not None:
            if self.store.batches.prune(self.batches, self.batch) < self.batch:
                self.batches = None
            return 0
        return None

    def run(self) -> int:
        """Every batch, one after the other; how many jobs."""
        while self.step() is not None:
            pass
        return self.jobs

    async def paced(self, db: DbCall, clock: Clock, timer: Timer, until: datetime) -> bool:
        """The batches, each run through ``db`` and followed by a wait of ``pause`` times its
        own time (no longer than keeps ``pace``), until none is left (``True``) or ``clock``
        reads ``until`` (``False``)."""
        while (began := clock.now()) < until:
            deleted = await db(self.step)
            if deleted is None:
                return True
            took = (clock.now() - began).total_seconds()
            await timer.sleep(min(took * self.pause, deleted / self.pace - took))
        return False


def start_pass(store: Store, retention: Retention, now: datetime) -> PrunePass:
    """Fold the jobs finished up to an hour ago into the tallies of exact counts, then a pass
    over what is past retention at ``now``."""
    store.finished.fold(now - FOLD_LAG)
    return PrunePass(store, retention, now)


def prune_finished(store: Store, retention: Retention, now: datetime) -> int:
    """Delete jobs finished longer ago than their retention, and schedule history entries older
    than the failed jobs' retention, without pausing (``rota prune``); return how many jobs."""
    return start_pass(store, retention, now).run()


def lease_pass(
    store: Store, owner: str, retention: Retention, now: datetime, lease: timedelta
) -> PrunePass | None:
    """A pass when this owner holds (or takes, or renews) the prune lease until ``now + lease``;
    ``None`` when another does.

    Rows of workers dead for longer than ``retention.workers`` go first (a worker killed with
    SIGKILL never unregisters), and flow-limit key rows not written for ``retention.limits``
    (a batch a pass); the pass counts jobs only."""
    if not store.cluster.acquire_lease(PRUNE_LEASE, owner, now, now + lease):
        return None
    store.cluster.prune_workers(now - retention.workers)
    store.jobs.prune_limits(now - retention.limits, retention.batch)
    return start_pass(store, retention, now)
