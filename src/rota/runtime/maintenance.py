"""Housekeeping any worker may do: rescue jobs of dead workers; prune old finished jobs.

A job whose lease expired goes back to ``pending`` (or ends when out of attempts) by whoever
sees it first; the compare-and-set in the store makes a second rescuer change nothing.

Only the holder of the short ``prune`` lease prunes, so replicas take turns instead of
deleting side by side; each batch is its own short transaction, so no lock is held for long.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.config import RotaConfig
from rota.core.events import EventName
from rota.core.model import FOLD_LAG, JobState
from rota.core.transitions import rescue
from rota.observe.events import EventLog
from rota.runtime.alerts import TickAlerts
from rota.runtime.executor import Executor
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
    store.fold_finished(now - FOLD_LAG)
    pruned = 0
    groups = (
        ((JobState.SUCCEEDED,), retention.succeeded),
        ((JobState.FAILED, JobState.CANCELLED), retention.failed),
    )
    for states, keep in groups:
        for _ in range(retention.max_batches):
            deleted = store.prune(states, now - keep, retention.batch)
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
    if not store.acquire_lease(PRUNE_LEASE, owner, now, now + lease):
        return None
    store.prune_workers(now - retention.workers)
    store.prune_limits(now - retention.limits, retention.batch)
    return prune_finished(store, retention, now)


def rescue_expired(
    store: Store,
    executor: Executor,
    events: EventLog,
    now: datetime,
    batch: int,
    alerts: TickAlerts | None = None,
) -> int:
    """Return jobs whose lease expired to ``pending`` (or finish them when out of attempts).

    Ticks that fail so count for ``alerts`` when every rescue of the batch applied (when another
    rescuer won some, which ones is unknown: an alert may then come a tick late, never early)."""
    expired = store.expired_leases(now, batch)
    if not expired:
        return 0
    transitions = [rescue(job, now, executor.policy(job.task), executor.rng) for job in expired]
    applied = store.rescue(transitions, now)
    if alerts is not None and applied == len(transitions):
        pairs = zip(expired, transitions, strict=True)
        alerts.record([(job, transition) for job, transition in pairs])
    for job, transition in zip(expired, transitions, strict=True):
        overdue = (now - (job.lease_until or now)) / timedelta(seconds=1)
        events.job(
            EventName.JOB_RECOVERED,
            job,
            logging.WARNING,
            lease_owner=job.lease_owner,
            to=transition.target.value,
            lease_expired_for=round(overdue, 3),
        )
    return applied
