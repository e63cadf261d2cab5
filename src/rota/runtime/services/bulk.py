"""Finding jobs and acting on every job a filter matches (``rota.find``, ``count``,
``retry/cancel/pause/resume/delete(matching=...)``), and changing one job by hand
(``update_job``, ``replay``).

A bulk action walks the matching jobs newest first in batches of ``BULK_BATCH`` ids, each
applied in its own short transaction as a compare-and-set on the state it acts from (a job a
worker claimed meanwhile is left to it), each change announced once committed, through the
same announcements as the action on one job; it reaches the jobs that matched when it began
(newer ones are past its first batch) and is recorded with its actor, filter and count.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rota.core import checks
from rota.core.events import EventName
from rota.core.model import JobState
from rota.core.names import check_name
from rota.core.search import (
    BULK_BATCH,
    Filter,
    Page,
    check_limit,
    check_meta,
    check_tags,
    decode_cursor,
    encode_cursor,
)
from rota.errors import InvalidArguments, JobNotFound
from rota.runtime.announcer import Announcer
from rota.runtime.common import Common, Gate
from rota.runtime.services import actors
from rota.runtime.services.control import job_id
from rota.store.base import Store

ACTIONS = ("retry", "cancel", "pause", "resume", "delete")


class Bulk:
    def __init__(self, common: Common, gate: Gate, announcer: Announcer) -> None:
        self.store, self.registry, self.clock, self.events = common
        self.gate = gate
        self.announcer = announcer

    def store_for(self, matching: Filter) -> Store:
        """The store of the filter's namespace (the caller's own by default)."""
        namespace = matching.namespace
        if namespace is None or namespace == self.store.namespace:
            return self.store
        return self.store.in_namespace(namespace)

    def find(self, matching: Filter, limit: object, cursor: object) -> Page:
        size, before = check_limit(limit), decode_cursor(cursor)
        self.gate.ensure_ready()
        jobs, after = self.store_for(matching).search.find(matching, size, before)
        return Page(jobs, None if after is None else encode_cursor(after))

    def count(self, matching: Filter) -> int:
        self.gate.ensure_ready()
        return self.store_for(matching).search.count(matching)

    def act(self, action: str, matching: object) -> int:
        """Apply ``action`` to every job ``matching`` reaches; how many it changed."""
        if not isinstance(matching, Filter):
            raise InvalidArguments(f"matching= takes a Filter, got {type(matching).__name__}")
        self.gate.ensure_ready()
        store, before, total = self.store_for(matching), None, 0
        while True:
            ids, before = store.search.matching(matching, BULK_BATCH, before)
            if ids:
                total += self._apply(store, action, ids)
            if before is None:
                break
        actor, now = actors.current(), self.clock.now()
        store.edits.record(action, matching.to_json(), actor, total, now)
        self.events.emit(
            EventName.JOBS_BULK, action=action, jobs=total, actor=actor, filter=matching.to_json()
        )
        if action in ("retry", "resume"):
            self.gate.wake_worker()
        return total

    def _apply(self, store: Store, action: str, ids: Sequence[int]) -> int:
        now = self.clock.now()
        if action == "cancel":
            applied, reached = store.jobs.cancel_many(ids, now)
            for job in reached:
                self.announcer.cancelled(job, applied)
            return len(applied.job_ids) + len(applied.requested)
        if action == "retry":
            changed = store.finished.retry(ids, now)
            for job in changed:
                self.announcer.retried(job)
            return len(changed)
        if action == "delete":
            changed = store.finished.delete(ids)
            event = EventName.JOB_DELETED
        elif action == "pause":
            changed = store.jobs.move_many(ids, JobState.PENDING, JobState.PAUSED)
            event = EventName.JOB_PAUSED
        else:
            changed = store.jobs.move_many(ids, JobState.PAUSED, JobState.PENDING)
            event = EventName.JOB_RESUMED
        for job in changed:
            self.events.job(event, job)
        return len(changed)

    def delete(self, id: object) -> bool:
        """Delete one job unless it is running or waiting; ``False`` if nothing was deleted."""
        checked = job_id(id)
        self.gate.ensure_ready()
        deleted = self.store.finished.delete([checked])
        for job in deleted:
            self.events.job(EventName.JOB_DELETED, job)
        return bool(deleted)

    def update(
        self,
        id: object,
        run_at: datetime | None,
        priority: int | None,
        queue: str | None,
        tags: Sequence[str] | None,
        meta: dict[str, Any] | None,
    ) -> bool:
        checked = job_id(id)
        values: dict[str, Any] = {}
        if run_at is not None:
            values["run_at"] = checks.moment(run_at, InvalidArguments, "run_at")
        if priority is not None:
            values["priority"] = checks.check_priority(priority, InvalidArguments)
        if queue is not None:
            values["queue"] = check_name("queue", queue, InvalidArguments)
        if meta is not None:
            values["meta"] = check_meta(meta)
        given = None if tags is None else check_tags(tags)
        if not values and given is None:
            raise InvalidArguments("update_job changes run_at, priority, queue, tags or meta")
        self.gate.ensure_ready()
        updated = self.store.edits.update(checked, values, given)
        if updated is None:
            raise JobNotFound(f"job {checked} does not exist")
        if updated:
            changed = sorted([*values, *(["tags"] if given is not None else [])])
            self.events.emit(
                EventName.JOB_UPDATED, logging.INFO, job_id=checked, changed=",".join(changed)
            )
            self.gate.wake_worker()
        return updated

    def replay(self, id: object) -> int:
        checked = job_id(id)
        self.gate.ensure_ready()
        new_id = self.store.edits.replay(checked, self.clock.now())
        if new_id is not None:
            self.gate.wake_worker()
            return new_id
        state = self.store.reads.job_state(checked)
        if state is None:
            raise JobNotFound(f"job {checked} does not exist")
        raise InvalidArguments(f"job {checked} is {state}: only a finished job can be replayed")
