"""Schedule definitions and control: code schedules synced at start, runtime schedules, pause,
resume and cancel, and running a schedule's job now.

Code is the source of truth for definitions and the database for run state (invariant 4): at
start the schedules code defines are upserted by name and code schedules code no longer defines
are disabled.  Every change that starts a schedule again (created, changed, resumed) starts it
at the first tick at or after that moment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.core import payload, values
from rota.core.cron import Cron
from rota.core.model import ScheduleSource, ScheduleSpec, ScheduleState
from rota.core.names import check_name, name_problem
from rota.enqueue import Target
from rota.errors import ConfigError, ScheduleNotFound
from rota.runtime.parts import Parts
from rota.runtime.scheduler import schedule_job
from rota.store.base import ScheduleStore
from rota.tasks import Handler, TaskDefinition

LIVE_STATES = (ScheduleState.ACTIVE, ScheduleState.PAUSED)


def code_spec(definition: TaskDefinition, arguments: str) -> ScheduleSpec:
    assert definition.cron is not None
    return ScheduleSpec(
        name=definition.name,
        task=definition.name,
        cron=definition.cron,
        tz=definition.tz,
        payload=arguments,
        queue=definition.queue,
        priority=definition.priority,
        source=ScheduleSource.CODE,
    )


def sync_code_schedules(
    store: ScheduleStore,
    specs: Iterable[ScheduleSpec],
    own_tasks: Iterable[str],
    live_tasks: Iterable[str],
    now: datetime,
) -> list[str]:
    """Upsert the schedules code defines; disable code schedules code no longer defines.

    A code schedule is left alone when its task belongs to another live service sharing the
    database (a live worker registers it and this process does not).  Returns the names
    disabled.
    """
    defined = set()
    for spec in specs:
        store.upsert(spec, Cron(spec.cron, spec.tz).first_run(now), now)
        defined.add(spec.name)
    mine, elsewhere = set(own_tasks), set(live_tasks) - set(own_tasks)
    stale = [
        schedule.name
        for schedule in store.all(LIVE_STATES)
        if schedule.spec.source is ScheduleSource.CODE
        and schedule.name not in defined
        and (schedule.spec.task in mine or schedule.spec.task not in elsewhere)
    ]
    store.disable(stale, now)
    return stale


class ScheduleControl:
    def __init__(
        self,
        parts: Parts,
        max_payload_bytes: int,
        resolve: Callable[[str | Handler], Target],
    ) -> None:
        self.store, self.registry, self.clock, self.events = parts
        self.max_payload_bytes = max_payload_bytes
        self.resolve = resolve

    def sync_code(self) -> None:
        """Upsert the code's schedules, disable the removed ones (logged)."""
        now = self.clock.now()
        empty = payload.encode((), {})
        specs = [code_spec(task, empty) for task in self.registry if task.cron is not None]
        live = self.store.workers(now)
        live_tasks = {task for worker in live for task in worker.tasks}
        disabled = sync_code_schedules(
            self.store.schedules, specs, self.registry.names(), live_tasks, now
        )
        for name in disabled:
            self.events.emit(
                "schedule.disabled",
                logging.WARNING,
                schedule=name,
                reason="no longer defined in code",
            )

    def define(
        self,
        cron: str,
        task: str | Handler,
        name: str | None,
        tz: str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        queue: str | None,
        priority: int | None,
    ) -> str:
        """Create or update a runtime schedule by name; a code schedule's name is refused."""
        checked = Cron(cron, tz)
        target = self.resolve(task)
        if target.definition is not None:
            target.definition.check_arguments(args, kwargs)
        if priority is not None:
            values.check_priority(priority, ConfigError)
        default_priority = target.definition.priority if target.definition else 0
        spec = ScheduleSpec(
            name=target.name if name is None else name,
            task=target.name,
            cron=cron,
            tz=tz,
            payload=payload.encode(args, kwargs, max_bytes=self.max_payload_bytes),
            queue=target.queue if queue is None else queue,
            priority=default_priority if priority is None else priority,
            source=ScheduleSource.RUNTIME,
        )
        check_name("schedule", spec.name, ConfigError)
        check_name("queue", spec.queue, ConfigError)
        now = self.clock.now()
        existing = self.store.schedules.get(spec.name)
        if existing is not None and existing.spec.source is ScheduleSource.CODE:
            raise ConfigError(f"schedule {spec.name!r} is defined in code; give another name")
        self.store.schedules.upsert(spec, checked.first_run(now), now)
        return spec.name

    def switch(self, name: str | None, target: ScheduleState, source: ScheduleState) -> int:
        """Move one schedule (or all, for ``None``) from ``source`` to ``target``: pause or
        cancel; resuming goes through ``resume``, which restarts the schedule's ticks."""
        self.exists(name)
        changed = self.store.schedules.set_state(name, target, (source,))
        self._found(name, changed)
        return changed

    def resume(self, name: str | None) -> int:
        """Paused schedules back to active from their first tick at or after now; ticks that
        passed while paused never run."""
        self.exists(name)
        now = self.clock.now()
        next_runs = {
            schedule.name: Cron(schedule.spec.cron, schedule.spec.tz).first_run(now)
            for schedule in self.store.schedules.all((ScheduleState.PAUSED,))
            if name is None or schedule.name == name
        }
        resumed = self.store.schedules.resume(next_runs, now)
        self._found(name, resumed)
        return resumed

    def cancel(self, name: str) -> bool:
        """``False`` when there is no such schedule, or it had ended."""
        if name_problem("schedule", name) is not None:
            return False
        live = (ScheduleState.ACTIVE, ScheduleState.PAUSED)
        return bool(self.store.schedules.set_state(name, ScheduleState.CANCELLED, live))

    def run_now(self, name: str) -> int:
        self.exists(name)
        schedule = self.store.schedules.get(name)
        if schedule is None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")
        now = self.clock.now()
        (job_id,) = self.store.enqueue([schedule_job(schedule, now, self.registry, None)], now)
        return job_id

    @staticmethod
    def exists(name: str | None) -> None:
        """A name no schedule can have is not found, rather than sent to the driver."""
        if name is not None and name_problem("schedule", name) is not None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")

    def _found(self, name: str | None, changed: int) -> None:
        if name is not None and not changed and self.store.schedules.get(name) is None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")
