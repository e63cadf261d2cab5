"""The cron service: turn due schedule ticks into jobs, then sleep until the next tick is due.

Every process runs one; they need no leader because ``ScheduleStore.fire`` lets exactly one
instance enqueue each tick.  The loop wakes at the earliest ``next_run_at`` (or after one poll
interval, to notice schedules added, paused or resumed elsewhere).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from rota.config import RotaConfig
from rota.core.clock import Clock
from rota.core.cron import Cron
from rota.core.events import EventName
from rota.core.model import NewJob
from rota.core.planner import Plan, plan
from rota.core.schedules import Schedule
from rota.errors import RotaError
from rota.observe.events import EventLog
from rota.runtime.services import actors
from rota.runtime.timer import Timer
from rota.runtime.worker.backoff import LoopBackoff
from rota.runtime.worker.outlook import SharedOutlook
from rota.store.base import ScheduleStore
from rota.store.values import Fired, Outlook
from rota.tasks import TaskRegistry

MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class SchedulerSettings:
    misfire_grace: float = RotaConfig.misfire_grace
    catchup_missed: bool = RotaConfig.catchup_missed
    max_missed_runs: int = RotaConfig.max_missed_runs
    poll_interval: float = RotaConfig.poll_interval
    batch: int = 100


def fire_due(
    store: ScheduleStore,
    registry: TaskRegistry,
    settings: SchedulerSettings,
    events: EventLog,
    now: datetime,
) -> int:
    """Enqueue the due ticks of every due schedule, a batch of schedules a transaction, and
    announce them once committed; return how many jobs were added."""
    fired = 0
    while True:
        planner = TickPlanner(registry, settings, now)
        batch = store.fire_due(now, settings.batch, planner)
        for name, error in planner.invalid.items():
            events.emit(EventName.SCHEDULE_INVALID, logging.ERROR, schedule=name, error=error)
        store.disable(list(planner.invalid), now, actors.SCHEDULER)
        for done in batch.fired:
            announce(done, planner.plans[done.schedule.name], events)
            fired += len(done.jobs)
        if batch.taken < settings.batch or not (batch.fired or planner.invalid):
            return fired


@dataclass
class TickPlanner:
    """Plans the ticks of each schedule of one batch (``ScheduleStore.fire_due``'s planner),
    keeping what is announced once the batch is committed: each schedule's plan, and the
    schedules whose rule cannot be read, left for the pass to disable."""

    registry: TaskRegistry
    settings: SchedulerSettings
    now: datetime
    plans: dict[str, Plan] = field(default_factory=dict)
    invalid: dict[str, RotaError] = field(default_factory=dict)

    def __call__(self, schedule: Schedule) -> tuple[datetime, list[NewJob]] | None:
        try:
            cron = Cron(schedule.spec.cron, schedule.spec.tz)
        except RotaError as error:
            self.invalid[schedule.name] = error
            return None
        decided = plan(
            cron,
            schedule.next_run_at,
            self.now,
            misfire_grace=timedelta(seconds=self.settings.misfire_grace),
            catchup=self.settings.catchup_missed,
            max_missed=self.settings.max_missed_runs,
        )
        self.plans[schedule.name] = decided
        jobs = [schedule_job(schedule, tick, self.registry) for tick in decided.ticks]
        return decided.next_run, jobs


def announce(done: Fired, decided: Plan, events: EventLog) -> None:
    """The events of one schedule's firing: skipped ticks, missed ticks, jobs enqueued."""
    schedule = done.schedule
    for tick in done.decision.skipped:
        events.emit(
            EventName.SCHEDULE_SKIPPED,
            schedule=schedule.name,
            task=schedule.spec.task,
            scheduled_at=tick.isoformat(),
            unfinished=list(done.decision.unfinished),
        )
    if decided.missed:
        events.emit(
            EventName.SCHEDULE_MISSED,
            logging.WARNING,
            schedule=schedule.name,
            task=schedule.spec.task,
            count=decided.missed,
            skipped=decided.skipped,
            caught_up=decided.caught_up,
        )
    for job in done.jobs:
        events.emit(
            EventName.JOB_SCHEDULED,
            schedule=schedule.name,
            task=job.task,
            queue=job.queue,
            scheduled_at=job.scheduled_at.isoformat() if job.scheduled_at else None,
        )


def schedule_job(
    schedule: Schedule, tick: datetime, registry: TaskRegistry, manual: bool = False
) -> NewJob:
    """A job of ``schedule`` due at ``tick``: a cron tick, or the moment a manual run was asked
    for, which handlers see as ``ctx.scheduled_at`` all the same (their idempotency key)."""
    definition = registry.find(schedule.spec.task)
    return NewJob(
        task=schedule.spec.task,
        payload=schedule.spec.payload,
        run_at=tick,
        queue=schedule.spec.queue,
        priority=schedule.spec.priority,
        max_attempts=definition.policy.max_attempts if definition else None,
        schedule=schedule.name,
        scheduled_at=tick,
        manual=manual,
        tags=tuple(definition.tags) if definition else (),
    )


class Scheduler:
    def __init__(
        self,
        store: ScheduleStore,
        registry: TaskRegistry,
        clock: Clock,
        events: EventLog,
        settings: SchedulerSettings,
        db_call: Callable[..., Awaitable[Any]],
        on_fired: Callable[[], None],
        shared_outlook: SharedOutlook | None = None,
    ) -> None:
        """``shared_outlook``: the idle worker's outlook, whose next tick spares this loop its own
        queries while it is fresh, and wakes it when a tick is due."""
        self.store = store
        self.registry = registry
        self.clock = clock
        self.events = events
        self.settings = settings
        self._db = db_call
        self._on_fired = on_fired
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._timer = Timer(clock)
        self._task: asyncio.Task[None] | None = None
        self._shared_outlook = shared_outlook
        self._asked = True
        """A schedule changed in this process (or none looked yet): query, whatever the outlook."""
        self._looked: tuple[datetime, datetime | None] | None = None
        """When this loop last queried, and the next tick it found."""
        if shared_outlook is not None:
            shared_outlook.listen(self._heard)

    def wake(self) -> None:
        """A schedule changed in this process: look again now rather than after the sleep."""
        self._asked = True
        self._wake.set()

    def _heard(self, outlook: Outlook) -> None:
        if outlook.next_tick is not None and outlook.next_tick <= outlook.at:
            self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rota-scheduler")

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        backoff = LoopBackoff("scheduler", MAX_BACKOFF, self.events)
        while not self._stopping.is_set():
            try:
                delay = await self._pass()
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
            self._wake.clear()
            if self._stopping.is_set():
                return
            await self._timer.wait(self._wake, delay)

    async def _pass(self) -> float:
        """Fire what is due; the seconds until the next tick, at most a poll.  A tick still due
        after a pass that fired nothing (its schedule's row cannot be read, and is skipped) is
        looked at again after a poll, not at once."""
        now = self.clock.now()
        known, next_due = self._known_next_tick()
        idle = False
        if self._asked or not known or (next_due is not None and next_due <= now):
            self._asked = False
            events, settings = self.events, self.settings
            fired = await self._db(fire_due, self.store, self.registry, settings, events, now)
            if fired:
                self._on_fired()
            next_due = await self._db(self.store.next_due)
            self._looked = (now, next_due)
            idle = not fired
        if next_due is None:
            return self.settings.poll_interval
        wait = (next_due - self.clock.now()).total_seconds()
        if wait <= 0 and idle:
            return self.settings.poll_interval
        return min(max(wait, 0.0), self.settings.poll_interval)

    def _known_next_tick(self) -> tuple[bool, datetime | None]:
        """Whether the next tick is known without a query, and when it is: the newest of a
        fresh outlook and this loop's own last query (unknown without a fresh outlook: the
        worker is busy, so this loop queries, as it always did)."""
        outlook = self._shared_outlook.fresh() if self._shared_outlook is not None else None
        if outlook is None:
            return False, None
        if self._looked is not None and self._looked[0] >= outlook.at:
            return True, self._looked[1]
        return True, outlook.next_tick
