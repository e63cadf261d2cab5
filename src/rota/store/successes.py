"""The UPDATE that successes without a result share, kept built for each worker.

A worker's completions are nearly all successes without a result, written together in one
compare-and-set UPDATE a batch; building it again for each batch cost more CPU than writing it
(issue 33). Its condition that the jobs are still running under the worker's lease is made once
a worker, so that the statement built on it can be kept: the ids, the attempt and the time are
its parameters.
"""

from __future__ import annotations

from sqlalchemy import Table, Update, and_, bindparam, update
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import JobState
from rota.store.kept import Kept
from rota.store.rows import RUNNING, finished_values

KEPT_GUARDS = 64
"""Workers whose statements are kept built (a process has one or a few)."""


class Successes:
    def __init__(self, table: Table) -> None:
        self.table = table
        self._guards: dict[str, ColumnElement[bool]] = {}
        self._kept: Kept[Update] = Kept(2 * KEPT_GUARDS)

    def held_by(self, worker_id: str) -> ColumnElement[bool]:
        """The compare-and-set's condition that a job is still running under ``worker_id``'s
        lease: one a worker, so that the statements built on it can be kept (``update``)."""
        guard = self._guards.get(worker_id)
        if guard is None:
            if len(self._guards) >= KEPT_GUARDS:
                self._guards.clear()
                self._kept.clear()
            jobs = self.table
            guard = and_(jobs.c.state == RUNNING, jobs.c.lease_owner == worker_id)
            self._guards[worker_id] = guard
        return guard

    def update(self, guard: ColumnElement[bool], held: int | None) -> Update:
        """The shared UPDATE of successes without a result, under ``guard`` (at attempt
        ``held``, a parameter), their ids and the time parameters too: kept for a worker's
        guard, built afresh for any other (a rescue's, which names its time)."""

        def build() -> Update:
            jobs = self.table
            at_held = () if held is None else (jobs.c.attempt == bindparam("held"),)
            return (
                update(jobs)
                .where(jobs.c.id.in_(bindparam("ids", expanding=True)), guard, *at_held)
                .values(
                    state=JobState.SUCCEEDED.value,
                    finished_at=bindparam("finished_at", type_=jobs.c.finished_at.type),
                    **finished_values(jobs),
                )
            )

        if not any(guard is known for known in self._guards.values()):
            return build()
        return self._kept.get((id(guard), held is None), build, on=guard)
