"""A schedule's unfinished runs, read when a tick fires, and the links that hold a ``queue``
schedule's tick until they have ended (``rota.core.overlap`` decides; this writes).

The runs are read from the newest ``RECENT`` jobs of the schedule, on the tick's unique index
(``schedule, scheduled_at``) walked backwards, so firing costs the same however many ticks are
kept.  Under ``skip`` or ``queue`` an unfinished run is always among the newest (nothing older
can still be waiting while newer ticks were let start); an older one is missed only if it
outlived ``RECENT`` later runs, which only ``allow`` (or many manual runs) could have made.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, true, update
from sqlalchemy.engine import Connection

from rota.core.model import FINAL_STATES, JobState
from rota.core.overlap import Decision
from rota.store.database import Database
from rota.store.dependencies import SqlDependencies
from rota.store.rows import aware

RECENT = 100
UNFINISHED = frozenset(
    state.value for state in JobState if state not in FINAL_STATES and state is not JobState.UNKNOWN
)


class SqlOverlap:
    def __init__(self, database: Database) -> None:
        self.jobs = database.schema.jobs
        self.mine = database.mine(self.jobs)
        self.dependencies = SqlDependencies(database)

    def unfinished(
        self, connection: Connection, schedule: str, ticks: Sequence[datetime]
    ) -> tuple[list[int], set[datetime]]:
        """The ids of the schedule's jobs (ticks and manual runs) not yet final, except the
        jobs of ``ticks`` themselves; and those of ``ticks`` that already have their job (a
        tick fired again after a resume, or by another instance), which are no new run."""
        jobs = self.jobs
        newest = (
            select(jobs.c.id, jobs.c.state, jobs.c.scheduled_at, jobs.c.tick)
            .where(self.mine, jobs.c.schedule == schedule)
            .order_by(jobs.c.scheduled_at.desc())
            .limit(RECENT)
        )
        planned = set(ticks)
        unfinished: list[int] = []
        fired: set[datetime] = set()
        for job_id, state, at, tick in connection.execute(newest):
            moment = aware(at)
            if tick and moment is not None and moment in planned:
                fired.add(moment)
            elif state in UNFINISHED:
                unfinished.append(job_id)
        return unfinished, fired

    def hold(
        self, connection: Connection, schedule: str, decision: Decision
    ) -> dict[datetime, tuple[int, ...]]:
        """Link each tick job just written to the runs it waits for: the unfinished ones, and
        the ticks before it in this pass.  Links point to older jobs only (the graph has no
        cycle, and a tick whose job already existed never waits for itself).  What each
        tick's job waits for."""
        if not decision.chained or not decision.enqueue:
            return {}
        jobs = self.jobs
        query = select(jobs.c.scheduled_at, jobs.c.id).where(
            self.mine,
            jobs.c.schedule == schedule,
            jobs.c.tick == true(),
            jobs.c.scheduled_at.in_(decision.enqueue),
        )
        written = {aware(at): job_id for at, job_id in connection.execute(query)}
        waits: dict[datetime, tuple[int, ...]] = {}
        before: list[int] = list(decision.unfinished)
        for tick in decision.enqueue:
            job_id = written.get(tick)
            if job_id is None:
                continue
            waits[tick] = tuple(sorted({parent for parent in before if parent < job_id}))
            before.append(job_id)
        held = {written[tick]: wait for tick, wait in waits.items() if wait}
        if held:
            ids = sorted(held)
            self.dependencies.link(connection, ids, [held[i] for i in ids], until_final=True)
            connection.execute(update(jobs).where(jobs.c.id.in_(ids)).values(has_dependencies=True))
        return waits
