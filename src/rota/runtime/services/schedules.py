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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.core import checks, payload, schedule_edits
from rota.core.cron import Cron
from rota.core.events import EventName
from rota.core.names import check_name, name_problem
from rota.core.overlap import overlap_policy
from rota.core.schedule_edits import Edit
from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleChange,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
)
from rota.enqueue import Target
from rota.errors import ConfigError, InvalidArguments, ScheduleConflict, ScheduleNotFound
from rota.runtime.common import Common, Gate
from rota.runtime.services import actors
from rota.runtime.worker.scheduler import schedule_job
from rota.store.base import ScheduleStore
from rota.tasks import Handler, TaskDefinition

LIVE_STATES = (ScheduleState.ACTIVE, ScheduleState.PAUSED)
EDITED = {
    ScheduleAction.UPDATED: EventName.SCHEDULE_UPDATED,
    ScheduleAction.OVERRIDDEN: EventName.SCHEDULE_OVERRIDDEN,
    ScheduleAction.RESET: EventName.SCHEDULE_RESET,
}
"""The event of each edit of a live schedule's rule (``update_schedule``, ``reset_schedule``)."""


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
        overlap=overlap_policy(definition.overlap, ConfigError),
    )


@dataclass(frozen=True)
class Synced:
    disabled: list[str]
    """Code schedules no longer in code, now disabled."""
    cleared: list[tuple[str, str, str]]
    """Overrides ended by code whose rule changed (``override_cleared``): the schedule, the
    override's rule and the code's new rule."""


def sync_code_schedules(
    store: ScheduleStore,
    specs: Iterable[ScheduleSpec],
    own_tasks: Iterable[str],
    live_tasks: Iterable[str],
    now: datetime,
) -> Synced:
    """Upsert the schedules code defines; disable code schedules code no longer defines.

    A code schedule is left alone when its task belongs to another live service sharing the
    database (a live worker registers it and this process does not).
    """
    specs = list(specs)
    first_runs = [(spec, Cron(spec.cron, spec.tz).first_run(now)) for spec in specs]
    edits = store.upsert_many(first_runs, now, actors.CODE)
    cleared = []
    for spec in specs:
        edit = edits.get(spec.name)
        if edit is not None and edit.action is ScheduleAction.OVERRIDE_CLEARED:
            override = {"cron": spec.cron, "tz": spec.tz, **edit.old}
            cleared.append((spec.name, rule(override), rule({"cron": spec.cron, "tz": spec.tz})))
    defined = {spec.name for spec in specs}
    mine, elsewhere = set(own_tasks), set(live_tasks) - set(own_tasks)
    stale = [
        schedule.name
        for schedule in store.all(LIVE_STATES)
        if schedule.spec.source is ScheduleSource.CODE
        and schedule.name not in defined
        and (schedule.spec.task in mine or schedule.spec.task not in elsewhere)
    ]
    store.disable(stale, now, actors.CODE)
    return Synced(stale, cleared)


class ScheduleControl:
    def __init__(
        self,
        common: Common,
        max_payload_bytes: int,
        resolve: Callable[[str | Handler], Target],
        gate: Gate,
    ) -> None:
        self.store, self.registry, self.clock, self.events = common
        self.max_payload_bytes = max_payload_bytes
        self.resolve = resolve
        self.gate = gate

    def sync_code(self) -> None:
        """Upsert the code's schedules, disable the removed ones (logged), and log each
        override that a change of the code's rule ended."""
        now = self.clock.now()
        empty = payload.encode((), {})
        specs = [code_spec(task, empty) for task in self.registry if task.cron is not None]
        live = self.store.cluster.workers(now)
        live_tasks = {task for worker in live for task in worker.tasks}
        synced = sync_code_schedules(
            self.store.schedules, specs, self.registry.names(), live_tasks, now
        )
        for name in synced.disabled:
            self.events.emit(
                EventName.SCHEDULE_DISABLED,
                logging.WARNING,
                schedule=name,
                reason="no longer defined in code",
            )
        for name, override, code in synced.cleared:
            self.events.emit(
                EventName.SCHEDULE_OVERRIDE_CLEARED,
                logging.WARNING,
                schedule=name,
                override=override,
                code=code,
                reason="the code's rule changed",
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
        overlap: str,
    ) -> str:
        """Create or update a runtime schedule by name; a code schedule's name is refused."""
        self.gate.ensure_ready()
        checked = Cron(cron, tz)
        policy = overlap_policy(overlap, ConfigError)
        target = self.resolve(task)
        if target.definition is not None:
            target.definition.check_arguments(args, kwargs)
        if priority is not None:
            checks.check_priority(priority, ConfigError)
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
            overlap=policy,
        )
        check_name("schedule", spec.name, ConfigError)
        check_name("queue", spec.queue, ConfigError)
        now = self.clock.now()
        existing = self.store.schedules.get(spec.name)
        if existing is not None and existing.spec.source is ScheduleSource.CODE:
            raise ConfigError(f"schedule {spec.name!r} is defined in code; give another name")
        self.store.schedules.upsert(spec, checked.first_run(now), now, actors.current())
        self.gate.wake_scheduler()
        return spec.name

    def update(
        self,
        name: str,
        cron: str | None,
        tz: str | None,
        overlap: str | None = None,
        version: int | None = None,
    ) -> Schedule:
        """Change a live schedule's rule (cron, time zone, overlap policy), from its first tick
        at or after now: an override of a code schedule, an update of a runtime one.  A
        compare-and-set on the version read (or on ``version``, the one the caller showed its
        user): if the schedule changed meanwhile, ``ScheduleConflict`` and nothing is
        written."""
        if cron is None and tz is None and overlap is None:
            raise InvalidArguments("update_schedule needs cron=, tz=, overlap= or some of them")
        policy = None if overlap is None else overlap_policy(overlap, InvalidArguments)
        schedule = self.seen_at(self.live(name, "change"), version)
        spec = schedule.spec
        rule = (
            spec.cron if cron is None else cron,
            spec.tz if tz is None else tz,
            spec.overlap if policy is None else policy,
        )
        now = self.clock.now()
        edit = schedule_edits.update(schedule, rule, Cron(rule[0], rule[1]).first_run(now))
        changed = self._change(schedule, edit, now)
        self.gate.wake_scheduler()
        return changed

    def reset(self, name: str, version: int | None = None) -> bool:
        """End a code schedule's override: back to the code's rule from its first tick at or
        after now.  ``False`` when the schedule is not overridden."""
        schedule = self.seen_at(self.live(name, "reset"), version)
        if not schedule.overridden:
            return False
        cron, tz, _ = schedule_edits.code_rule(schedule)
        now = self.clock.now()
        first_run = Cron(cron, tz).first_run(now)
        self._change(schedule, schedule_edits.reset(schedule, first_run), now)
        self.gate.wake_scheduler()
        return True

    def get(self, name: str) -> Schedule:
        self.exists(name)
        self.gate.ensure_ready()
        schedule = self.store.schedules.get(name)
        if schedule is None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")
        return schedule

    def history(self, name: str, limit: int | None) -> list[ScheduleChange]:
        if limit is not None:
            checks.check_int(limit, InvalidArguments, "limit", 0)
        self.get(name)
        return self.store.schedules.history_of(name, limit)

    def live(self, name: str, verb: str) -> Schedule:
        """The schedule, if it is active or paused; else the error saying why not."""
        schedule = self.get(name)
        if schedule.state not in LIVE_STATES:
            raise ConfigError(f"schedule {name!r} is {schedule.state}: it cannot {verb}")
        return schedule

    @staticmethod
    def seen_at(schedule: Schedule, version: int | None) -> Schedule:
        """The schedule, if it is still at the ``version`` the caller read (any, for None)."""
        if version is not None:
            checks.check_int(version, InvalidArguments, "version", 0)
            if version != schedule.version:
                raise ScheduleConflict(
                    f"schedule {schedule.name!r} was changed by someone else since it was read "
                    f"(now at version {schedule.version}, not {version}); nothing was written"
                )
        return schedule

    def _change(self, schedule: Schedule, edit: Edit | None, now: datetime) -> Schedule:
        if edit is None:
            return schedule
        store = self.store.schedules
        changed = store.change(schedule.name, schedule.version, edit, actors.current(), now)
        if changed is None:
            self.live(schedule.name, "change")
            raise ScheduleConflict(
                f"schedule {schedule.name!r} was changed by someone else meanwhile; nothing "
                "was written: read it again and repeat the change if it still applies"
            )
        self.events.emit(
            EDITED[edit.action],
            schedule=schedule.name,
            actor=actors.current(),
            old=rule(edit.old),
            new=rule(edit.new),
            next_run_at=changed.next_run_at,
        )
        return changed

    def switch(self, name: str | None, target: ScheduleState, source: ScheduleState) -> int:
        """Move one schedule (or all, for ``None``) from ``source`` to ``target``: pause or
        cancel; resuming goes through ``resume``, which restarts the schedule's ticks."""
        self.exists(name)
        now = self.clock.now()
        changed = self.store.schedules.set_state(name, target, (source,), now, actors.current())
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
        resumed = self.store.schedules.resume(next_runs, now, actors.current())
        self._found(name, resumed)
        return resumed

    def cancel(self, name: str) -> bool:
        """``False`` when there is no such schedule, or it had ended."""
        if name_problem("schedule", name) is not None:
            return False
        cancelled, now = ScheduleState.CANCELLED, self.clock.now()
        return bool(
            self.store.schedules.set_state(name, cancelled, LIVE_STATES, now, actors.current())
        )

    def run_now(self, name: str) -> int:
        """One job of a live schedule now (a paused one too: a manual run while its ticks are
        held); a cancelled or disabled schedule is refused, it has no rule in force.  Its
        ``scheduled_at`` is now, and it counts in the schedule's runs like a tick."""
        schedule = self.live(name, "run now")
        now = self.clock.now()
        job = schedule_job(schedule, now, self.registry, manual=True)
        (job_id,) = self.store.jobs.enqueue([job], now)
        self.gate.wake_worker()
        return job_id

    @staticmethod
    def exists(name: str | None) -> None:
        """A name no schedule can have is not found, rather than sent to the driver."""
        if name is not None and name_problem("schedule", name) is not None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")

    def _found(self, name: str | None, changed: int) -> None:
        if name is not None and not changed and self.store.schedules.get(name) is None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")


def rule(values: Mapping[str, Any]) -> str:
    """A rule as events show it: ``cron (tz)``, with ``overlap=...`` when it is part of it."""
    if "overlap" not in values:
        return f"{values.get('cron')} ({values.get('tz')})"
    if "cron" not in values and "tz" not in values:
        return f"overlap={values['overlap']}"
    return f"{values.get('cron')} ({values.get('tz')}) overlap={values['overlap']}"
