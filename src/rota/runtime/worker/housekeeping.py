"""The worker's housekeeping loops: rescue and prune (leases are ``worker.leases``').

*rescue* returns jobs of dead workers to ``pending`` (or ends them when out of attempts), by
whoever sees them first (the store's compare-and-set makes a second rescuer change nothing),
and announces what it applied; beside it, at most once a lease period, it marks the jobs of
live workers that are *stuck* (``core.stuck``) and announces those it marked, ``job.stuck``
once per attempt; *prune*
deletes old finished jobs while this worker holds the prune lease.  Each logs a database error,
backs off and carries on; so does one meeting any other error, logged with its traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from rota.core.events import EventName
from rota.core.model import Job
from rota.core.stuck import overdue, stuck_limit
from rota.core.transitions import lease_until, rescue
from rota.runtime.announcer import Announcer
from rota.runtime.retention import DbCall, Retention, lease_pass
from rota.runtime.worker.alerts import TickAlerts
from rota.runtime.worker.backoff import LoopBackoff
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.outlook import SharedOutlook
from rota.runtime.worker.settings import WorkerSettings
from rota.store.base import Store
from rota.tasks import TaskRegistry

logger = logging.getLogger("rota.worker")
STUCK_READ = 1_000
"""The most running jobs one look for stuck ones reads (more than any cluster's concurrency)."""


class Housekeeping:
    def __init__(
        self,
        worker_id: str,
        store: Store,
        executor: Executor,
        db_call: DbCall,
        settings: WorkerSettings,
        announcer: Announcer,
        alerts: TickAlerts | None = None,
        shared_outlook: SharedOutlook | None = None,
    ) -> None:
        """``announcer`` tells what a rescue applied; ``shared_outlook``: the idle claim loop's
        outlook, which spares the rescue its query while it is fresh and says no lease expired,
        and wakes it when one has."""
        self.worker_id = worker_id
        self.store = store
        self.executor = executor
        self.events = announcer.events
        self._db = db_call
        self.timer = executor.timer
        self.lease_seconds = settings.lease_seconds
        self.max_backoff = settings.max_backoff
        self.alerts = alerts
        self.shared_outlook = shared_outlook
        self.announcer = announcer
        self._expired = asyncio.Event()
        self._stuck_looked: datetime | None = None
        if shared_outlook is not None:
            shared_outlook.listen(
                lambda outlook: self._expired.set() if outlook.leases_expired else None
            )

    async def still_held(self, jobs: list[Job], until: datetime) -> list[Job]:
        """The claimed ``jobs`` this worker may start. A claim that took so long (a commit
        stalled by a failover or a Galera eviction) that less than a heartbeat period is left of
        the leases it handed out, or none, renews them first, and leaves out a job another
        worker rescued meanwhile, so that it never runs twice at once. Any other claim is left
        to the heartbeat, whose renewals this one would race."""
        now = self.executor.clock.now()
        if not jobs or until - now >= timedelta(seconds=self.lease_seconds / 3):
            return jobs
        ids = [job.id for job in jobs]
        renewed = lease_until(now, self.lease_seconds)
        _, lost = await self._db(self.store.jobs.heartbeat, self.worker_id, ids, now, renewed)
        if lost:
            self.events.log(
                logger,
                EventName.WORKER_CLAIM_OUTLIVED,
                logging.WARNING,
                "a slow claim's lease ran out: %d job(s) taken over meanwhile are left to the "
                "worker that has them (%s)",
                len(lost),
                ", ".join(map(str, sorted(lost))),
            )
        return [job for job in jobs if job.id not in lost]

    async def rescuing(self, poll_interval: float, batch: int, rescued: Callable[[], None]) -> None:
        """Every poll, return expired leases' jobs to pending and wake timed-out waits; skipped
        while a fresh outlook says there is neither (an idle worker's look covers both, and
        wakes this loop when there is). Stuck jobs, which no outlook sees, are looked for
        whatever it says (``stuck_once``)."""
        backoff = LoopBackoff("rescue", self.max_backoff, self.events)
        while True:
            delay = poll_interval
            fresh = self.shared_outlook.fresh() if self.shared_outlook is not None else None
            self._expired.clear()
            try:
                if (fresh is None or fresh.leases_expired) and await self.rescue_once(batch):
                    rescued()
                await self.stuck_once()
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
            await self.timer.wait(self._expired, delay)

    async def rescue_once(self, batch: int) -> int:
        """Rescue expired leases, and wake the waits whose timeout passed; how many jobs."""
        now = self.executor.clock.now()
        count: int = await self._db(
            rescue_expired, self.store, self.executor, self.announcer, now, batch, self.alerts
        )
        woken: int = await self._db(self.store.workflow.wake_timed_out, now, batch)
        return count + woken

    async def stuck_once(self) -> int:
        """Mark and announce the stuck jobs of this worker's tasks, whichever worker runs them;
        at most once a lease period (an attempt is stuck after minutes: a lease period late is
        on time, and a look every poll would read the running jobs every poll). How many."""
        now = self.executor.clock.now()
        period = timedelta(seconds=self.lease_seconds)
        if self._stuck_looked is not None and now - self._stuck_looked < period:
            return 0
        self._stuck_looked = now
        registry = self.executor.registry
        marked: int = await self._db(mark_stuck, self.store, registry, self.announcer, now)
        return marked

    async def pruning(self, interval: float, retention: Retention) -> None:
        """Every ``interval``, a prune pass while this worker holds the prune lease (taken for
        two intervals); a pass that ends with a backlog left is followed at once by the next."""
        backoff = LoopBackoff("prune", self.max_backoff, self.events)
        while True:
            delay = interval
            try:
                if await self.prune_once(timedelta(seconds=interval * 2), retention):
                    delay = 0
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
            await self.timer.sleep(delay)

    async def prune_once(self, lease: timedelta, retention: Retention) -> bool:
        """One pass, paced, within the first half of its ``lease``; whether it left jobs past
        retention (``False`` also when another worker holds the lease)."""
        clock = self.executor.clock
        now = clock.now()
        pruning = await self._db(lease_pass, self.store, self.worker_id, retention, now, lease)
        if pruning is None:
            return False
        done = await pruning.paced(self._db, clock, self.timer, now + lease / 2)
        if pruning.jobs:
            self.events.emit(EventName.JOBS_PRUNED, count=pruning.jobs)
        return not done


def rescue_expired(
    store: Store,
    executor: Executor,
    announcer: Announcer,
    now: datetime,
    batch: int,
    alerts: TickAlerts | None = None,
) -> int:
    """Return jobs whose lease expired to ``pending`` (or finish them when out of attempts);
    announce, and count for ``alerts``, those the rescue applied (another rescuer may win some);
    how many."""
    expired = store.jobs.expired_leases(now, batch)
    if not expired:
        return 0
    transitions = [rescue(job, now, executor.policy(job.task), executor.rng) for job in expired]
    applied = store.jobs.rescue(transitions, now)
    pairs = list(zip(expired, transitions, strict=True))
    announcer.rescued(pairs, applied)
    if alerts is not None:
        ticks = alerts.ticks(pair for pair in pairs if pair[1].job_id in applied.job_ids)
        if ticks:
            alerts.record(ticks)
    return len(applied)


def stuck_limits(registry: TaskRegistry) -> dict[str, float]:
    """Seconds an attempt of each task of ``registry`` may run before it is stuck, for the
    tasks that have such a limit (``core.stuck.stuck_limit``)."""
    limits = {task.name: stuck_limit(task.timeout, task.stuck_after) for task in registry}
    return {name: limit for name, limit in limits.items() if limit is not None}


def mark_stuck(store: Store, registry: TaskRegistry, announcer: Announcer, now: datetime) -> int:
    """Mark the running jobs of ``registry``'s tasks that are stuck at ``now`` and announce
    those the marks applied to (another worker may mark some first); how many. Only jobs that
    have run longer than the shortest limit are read."""
    limits = stuck_limits(registry)
    if not limits:
        return 0
    started_before = now - timedelta(seconds=min(limits.values()))
    running = store.stuck.running(sorted(limits), started_before, now, STUCK_READ)
    marked = store.stuck.mark(overdue(running, limits, now))
    announcer.stuck(marked, limits, now)
    return len(marked)
