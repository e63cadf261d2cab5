"""A schedule's unfinished runs, read when a tick fires, and the links that hold a ``queue``
schedule's tick until they have ended (``rota.core.overlap`` decides; this writes).

The runs are read from the newest ``RECENT`` jobs of the schedule, on the tick's unique index
(``schedule, scheduled_at``) walked backwards, so firing costs the same however many ticks are
kept.  Under ``skip`` or ``queue`` an unfinished run is always among the newest (nothing older
can still be waiting while newer ticks were let start); an older one is missed only if it
outlived ``RECENT`` later runs, which only ``allow`` (or many manual runs) could have made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Executable, and_, bindparam, or_, select, true, union_all, update
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
        self._queries: dict[int, Executable] = {}

    def unfinished(
        self, connection: Connection, ticks: Mapping[str, Sequence[datetime]]
    ) -> dict[str, tuple[list[int], set[datetime]]]:
        """Per schedule of ``ticks``: the ids of its jobs (ticks and manual runs) not yet final,
        except the jobs of its ``ticks`` themselves; and those of its ``ticks`` that already
        have their job (a tick fired again after a resume, or by another instance), which are
        no new run.  One statement for every schedule of a batch (``_newest``)."""
        found: dict[str, tuple[list[int], set[datetime]]] = {name: ([], set()) for name in ticks}
        if not ticks:
            return found
        parameters: dict[str, Any] = {}
        for index, (schedule, planned) in enumerate(ticks.items()):
            parameters[f"schedule_{index}"] = schedule
            parameters[f"ticks_{index}"] = list(planned)
        for schedule, job_id, state, at, tick in connection.execute(
            self._newest(len(ticks)), parameters
        ):
            unfinished, fired = found[schedule]
            moment = aware(at)
            if tick and moment is not None and moment in ticks[schedule]:
                fired.add(moment)
            elif state in UNFINISHED:
                unfinished.append(job_id)
        return found

    def _newest(self, count: int) -> Executable:
        """The query of ``count`` schedules: a branch each, reading the schedule's newest
        ``RECENT`` jobs and sending back only those that matter.  Built once per count, its
        values bound at each execution (building a batch's 100 branches cost more than
        running them)."""
        query = self._queries.get(count)
        if query is not None:
            return query
        jobs = self.jobs
        branches = []
        for index in range(count):
            newest = (
                select(jobs.c.schedule, jobs.c.id, jobs.c.state, jobs.c.scheduled_at, jobs.c.tick)
                .where(self.mine, jobs.c.schedule == bindparam(f"schedule_{index}"))
                .order_by(jobs.c.scheduled_at.desc())
                .limit(RECENT)
                .subquery()
            )
            planned = bindparam(f"ticks_{index}", expanding=True, type_=jobs.c.scheduled_at.type)
            fired = and_(newest.c.tick == true(), newest.c.scheduled_at.in_(planned))
            branches.append(
                select(*newest.c).where(or_(newest.c.state.in_(sorted(UNFINISHED)), fired))
            )
        query = branches[0] if count == 1 else union_all(*branches)
        self._queries[count] = query
        return query

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
