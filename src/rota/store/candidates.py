"""Which pending rows a claim takes: the candidate query, and the conditions it shares with the
idle look (a look must never see less work than a claim would).

Apart from ``jobs`` so that tests and ``bench/scale`` can EXPLAIN exactly what a claim runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select, union_all
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import JobState
from rota.store.cluster import paused_names
from rota.store.database import Database
from rota.store.dependencies import SqlDependencies
from rota.store.task_sets import TaskSets


class ClaimCandidates:
    def __init__(self, database: Database, dependencies: SqlDependencies) -> None:
        self.database = database
        self.table = database.schema.jobs
        self.dependencies = dependencies
        self.task_sets = TaskSets(database)

    def query(
        self,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        also: Sequence[ColumnElement[bool]] = (),
    ) -> Select[Any]:
        """The rows a claim takes and locks (``also``: more conditions, as flow control adds).

        One queue is one range of the claim index, read in priority and time order and locked
        as it is read, so a claim reads and locks the rows it takes. For several queues no index
        gives that order: ``queue IN (...)`` read, sorted and (on MySQL) locked every pending
        row, 200,000 locks and 200 ms a claim at 100,000 pending (issue 32). So each queue gives
        its own best ``limit`` unlocked, and the rows are locked by id in the order of the
        merged candidates: a row another claimer holds is skipped for the next candidate.
        """
        jobs = self.table
        ordered = (jobs.c.priority, jobs.c.run_at, jobs.c.id)

        def best(names: Sequence[str]) -> Select[Any]:
            where = (*self.due(names, tasks, now), self.dependencies.satisfied(), *also)
            return select(jobs).where(*where).order_by(*ordered).limit(limit)

        dialect = self.database.dialect
        if len(queues) == 1:
            return dialect.lock_for_claim(best(queues))
        branches = [best([queue]).with_only_columns(*ordered).subquery() for queue in queues]
        merged = union_all(*(select(*branch.c) for branch in branches)).subquery("candidates")
        query = (
            select(jobs)
            .join(merged, merged.c.id == jobs.c.id)
            .where(jobs.c.state == JobState.PENDING.value)
            .order_by(merged.c.priority, merged.c.run_at, merged.c.id)
            .limit(limit)
        )
        return dialect.lock_for_claim(query, of=jobs)

    def due(
        self, queues: Sequence[str], tasks: Sequence[str], now: datetime
    ) -> list[ColumnElement[bool]]:
        """A pending job of this namespace's ``tasks`` in an open queue of ``queues`` whose time
        has come: what a claim asks of its candidates besides their dependencies, and what the
        idle look asks too.

        The paused queues are a subquery, read and not locked (a locking read locks the rows of
        its own tables only, on MySQL and PostgreSQL): a claim is one round trip fewer than with
        them read first, and still sees a pause committed before it began.  The tasks are
        named by their set (``task_sets``), whose rows are written the first time a set is
        used, in a transaction of its own: the claim and the look ask for the key first.
        """
        jobs = self.table
        queue_match = jobs.c.queue == queues[0] if len(queues) == 1 else jobs.c.queue.in_(queues)
        return [
            self.database.mine(jobs),
            jobs.c.state == JobState.PENDING.value,
            queue_match,
            jobs.c.queue.not_in(paused_names(self.database)),
            jobs.c.run_at <= now,
            self.task_sets.holds(self.task_sets.key(tasks), jobs.c.task),
        ]
