"""Retention: how long finished jobs are kept, and their pruning.

Only the holder of the short ``prune`` lease prunes, so replicas take turns instead of
deleting side by side; each batch is its own short transaction, so no lock is held for long.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.config import RotaConfig
from rota.core.model import FOLD_LAG, JobState
from rota.store.base import Store

PRUNE_LEASE = "prune"


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
    max_batches: int = 200


def prune_finished(store: Store, retention: Retention, now: datetime) -> int:
    """Delete jobs finished longer ago than their retention, and schedule history entries older
    than the failed jobs' retention; return how many jobs.  The jobs finished up to an hour ago
    are folded into the tallies of exact counts first."""
    store.finished.fold(now - FOLD_LAG)
    pruned = 0
    groups = (
        ((JobState.SUCCEEDED,), retention.succeeded),
        ((JobState.FAILED, JobState.CANCELLED), retention.failed),
    )
    for states, keep in groups:
        for _ in range(retention.max_batches):
            deleted = store.finished.prune(states, now - keep, retention.batch)
            pruned += deleted
            if deleted < retention.batch:
                break
    for _ in range(retention.max_batches):
        if store.schedules.prune_history(now - retention.failed, retention.batch) < retention.batch:
            break
    return pruned


def prune_if_leased(
    store: Store, owner: str, retention: Retention, now: datetime, lease: timedelta
) -> int | None:
    """Prune when this owner holds (or takes) the prune lease; ``None`` when another does.

    Rows of workers dead for longer than ``retention.workers`` go too (a worker killed with
    SIGKILL never unregisters), and flow-limit key rows not written for ``retention.limits``
    (a batch a pass); their count is not in the jobs' count returned."""
    if not store.cluster.acquire_lease(PRUNE_LEASE, owner, now, now + lease):
        return None
    store.cluster.prune_workers(now - retention.workers)
    store.jobs.prune_limits(now - retention.limits, retention.batch)
    return prune_finished(store, retention, now)
