"""Finished jobs: retried, pruned, and counted exactly at the same cost with five thousand or
five million of them.

A finished job never changes, except that a retry takes it back and the prune deletes it.  So
their counts per state, queue and task are *folded*: ``tallies`` holds how many finished before
``tally_mark.folded_until`` (the mark), and the jobs that finished since are counted from the
finished-jobs index, a range that grows with the jobs finished per hour, not with retention.
The prune-lease holder moves the mark on before each prune (``runtime.retention``), at most
one whole UTC hour of history per transaction, up to ``FOLD_LAG`` before now, so each step
also adds its jobs to the hour tallies of that hour that windows of time read
(``store.windows``); a retry or a prune of a job finished before the mark takes it off its
tallies in its own transaction.

Why a count never misses or doubles a job: the fold and the prune lock the mark row for update,
the retry for share, so neither reads a mark that a fold is moving, nor does a retry take a job
out of a prune's batch between its count and its deletion; a count reads the mark,
the tallies and the range in one statement (one snapshot on every backend); and a job is folded
only once it finished ``FOLD_LAG`` before the fold's now, far beyond any clock skew or commit
delay between a worker's clock and its write.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, and_, delete, func, or_, select, union_all, update
from sqlalchemy.engine import Connection

from rota.core.model import Counts, JobRef, JobState
from rota.store.cluster import paused_names
from rota.store.database import Database, every_row
from rota.store.dependencies import SqlDependencies
from rota.store.tags import JobTags
from rota.store.values import Pruned
from rota.store.windows import HOUR, MARK, FinishedWindows, hour_of
from rota.store.workflow import SqlWorkflow

GROUPED = ("namespace", "state", "queue", "task")
"""The columns a tally counts finished jobs by (its key); the fold is one for every namespace."""
HOURLY = ("namespace", "hour", "state", "queue", "task")
"""The key of an hour tally."""

Finished = tuple[str, str, str, str, datetime]
"""What a tally needs of a finished job: its namespace, state, queue, task and ``finished_at``."""
Group = tuple[str, str, str, str]
"""A tally's key: namespace, state, queue and task."""
RETRIED = (JobState.FAILED.value, JobState.CANCELLED.value)
"""The states a retry takes a job back from."""
DELETED = (
    *(JobState.PENDING.value, JobState.PAUSED.value),
    *(JobState.SUCCEEDED.value, JobState.FAILED.value, JobState.CANCELLED.value),
)
"""The states a job may be deleted from: no worker holds it, none will wake it."""


class SqlFinished:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.tallies = database.schema.tallies
        self.mark = database.schema.tally_mark
        self.hours = database.schema.hour_tallies
        self.windows = FinishedWindows(database)
        self.dependencies = SqlDependencies(database)
        self.workflow = SqlWorkflow(database)
        self.tags = JobTags(database)

    def counts(self, finished_since: datetime | None = None) -> Counts:
        """The namespace's live jobs, and its finished ones: all of them (tallies before the
        mark, the index after it), or those that finished at or after ``finished_since``."""
        jobs, mark, tallies = self.jobs, self.mark, self.tallies
        mine = self.database.mine(jobs)
        columns = (jobs.c.state, jobs.c.queue, jobs.c.task)
        live = select(*columns, func.count()).where(mine, jobs.c.finished_at.is_(None))
        branches: list[Select[Any]] = [live.group_by(*columns)]
        if finished_since is None:
            since_mark = and_(mark.c.id == MARK, jobs.c.finished_at >= mark.c.folded_until)
            recent = select(*columns, func.count()).select_from(jobs.join(mark, since_mark))
            folded = select(tallies.c.state, tallies.c.queue, tallies.c.task, tallies.c.jobs)
            kept = folded.where(self.database.mine(tallies), tallies.c.jobs > 0)
            branches += [recent.where(mine).group_by(*columns), kept]
        else:
            branches += self.windows.since(finished_since)
        query = every_row(union_all(*branches))
        paused = paused_names(self.database)

        def work(connection: Connection) -> Counts:
            rows = [
                (state, queue, task, int(n)) for state, queue, task, n in connection.execute(query)
            ]
            paused_queues = set(connection.execute(paused).scalars())
            return Counts.from_rows(rows, finished_since, paused_queues)

        return self.database.transaction(work)

    def fold(self, until: datetime) -> int:
        """Fold the jobs finished before ``until`` into their tallies, a step a transaction;
        how many jobs were folded."""
        folded = 0
        while (step := self.database.transaction(lambda c: self._fold_step(c, until))) is not None:
            folded += step
        return folded

    def _fold_step(self, connection: Connection, until: datetime) -> int | None:
        """One step of ``fold``, within one UTC hour; ``None`` once the mark has reached
        ``until``."""
        jobs, mark = self.jobs, self.mark
        start = self._lock_mark(connection, exclusive=True)
        if start >= until:
            return None
        oldest = connection.execute(
            select(func.min(jobs.c.finished_at)).where(jobs.c.finished_at >= start)
        ).scalar()
        hour = hour_of(max(start, oldest or start))
        end = until if oldest is None else min(until, hour + HOUR)
        columns = [jobs.c[column] for column in GROUPED]
        counted = connection.execute(
            select(*columns, func.count())
            .where(jobs.c.finished_at >= start, jobs.c.finished_at < end)
            .group_by(*columns)
        )
        groups: Counter[Group] = Counter()
        for row in counted:
            namespace, state, queue, task, n = tuple(row)
            groups[namespace, state, queue, task] = int(n)
        self._add(connection, groups, hour)
        connection.execute(update(mark).where(mark.c.id == MARK).values(folded_until=end))
        return sum(groups.values())

    def retry(self, job_ids: Sequence[int], now: datetime) -> list[JobRef]:
        """Failed or cancelled jobs back to pending with a fresh budget of attempts and
        snoozes, their history kept (a compare-and-set on their state), off their tallies;
        the jobs it moved, as they were."""
        jobs = self.jobs
        values = {
            **{"state": JobState.PENDING.value, "attempt": 0, "run_at": now, "snoozes": 0},
            **{"finished_at": None, "cancel_requested": False, "lease_owner": None},
        }

        def work(connection: Connection) -> list[JobRef]:
            folded_until = self._lock_mark(connection)
            found = self._locked(connection, job_ids, RETRIED)
            if found:
                ids = [ref.id for ref, _ in found]
                connection.execute(update(jobs).where(jobs.c.id.in_(ids)).values(values))
                self._forget(connection, folded_until, [row for _, row in found])
            return [ref for ref, _ in found]

        return self.database.transaction(work, idempotent=False)

    def delete(self, job_ids: Sequence[int]) -> list[JobRef]:
        """Delete the jobs that are neither running nor waiting (a worker holds or will wake
        them), with their dependencies, steps, signals and tags, off their tallies; the jobs
        deleted."""
        jobs = self.jobs

        def work(connection: Connection) -> list[JobRef]:
            folded_until = self._lock_mark(connection, exclusive=True)
            found = self._locked(connection, job_ids, DELETED)
            ids = [ref.id for ref, _ in found]
            if ids:
                self.dependencies.forget(connection, ids)
                self.workflow.forget(connection, ids)
                self.tags.forget(connection, ids)
                connection.execute(delete(jobs).where(jobs.c.id.in_(ids)))
                ended = [row for _, row in found if row[-1] is not None]
                self._forget(connection, folded_until, ended)
            return [ref for ref, _ in found]

        return self.database.transaction(work)

    def _locked(
        self, connection: Connection, job_ids: Sequence[int], states: Sequence[str]
    ) -> list[tuple[JobRef, Finished]]:
        """The jobs of ``job_ids`` in ``states``, locked, as announced and as tallied."""
        jobs = self.jobs
        refs = (jobs.c.id, jobs.c.task, jobs.c.queue, jobs.c.attempt, jobs.c.schedule)
        tallied = (*(jobs.c[column] for column in GROUPED), jobs.c.finished_at)
        query = (
            select(*refs, *tallied)
            .where(jobs.c.id.in_(job_ids), jobs.c.state.in_(states))
            .order_by(jobs.c.id)
            .with_for_update()
        )
        return [(JobRef(*row[:5]), tuple(row[5:])) for row in connection.execute(query)]

    def prune(
        self,
        states: Sequence[JobState],
        before: datetime,
        limit: int,
        after: datetime | None = None,
    ) -> Pruned:
        """Delete the oldest ``limit`` jobs of ``states`` finished after ``after`` and before
        ``before`` (and any that finished at the same instant as the last of them), in one
        short transaction, off their tallies; fewer when the UTC hour of the oldest ends first.

        The batch is a range of the finished-jobs index, found by its last ``finished_at`` and
        deleted as that range on the server: no job's row or id crosses the connection (the
        client's time was most of a batch's), and the next batch starts past it, so it never
        walks again the entries of the rows just deleted, which stay in the index until
        InnoDB's purge or PostgreSQL's vacuum.  The range ends within the hour its oldest job
        finished in, so the jobs it takes off the tallies are all of that hour's tallies, which
        one GROUP BY counts.  The mark is held for update, so no retry takes a job out of the
        range between its count and its deletion."""
        jobs = self.jobs
        window = [
            jobs.c.finished_at < before,
            self.database.mine(jobs),
            jobs.c.state.in_([s.value for s in states]),
        ]
        if after is not None:
            window.append(jobs.c.finished_at > after)
        oldest = select(jobs.c.finished_at).where(*window).order_by(jobs.c.finished_at)
        columns = [jobs.c[column] for column in GROUPED]

        def work(connection: Connection) -> Pruned:
            folded_until = self._lock_mark(connection, exclusive=True)
            first = connection.execute(oldest.limit(1)).scalar()
            if first is None:
                return Pruned(0, None)
            hour = hour_of(first)
            within = jobs.c.finished_at < hour + HOUR
            through = connection.execute(oldest.where(within).offset(limit - 1).limit(1)).scalar()
            if through is None and hour + HOUR < before:
                last = select(func.max(jobs.c.finished_at)).where(*window, within)
                through = connection.execute(last).scalar_one()
            batch = and_(*window, *([] if through is None else [jobs.c.finished_at <= through]))
            folded = select(*columns, func.count()).where(batch, jobs.c.finished_at < folded_until)
            groups: Counter[Group] = Counter()
            for row in connection.execute(folded.group_by(*columns)):
                namespace, state, queue, task, n = tuple(row)
                groups[namespace, state, queue, task] = -int(n)
            flags = (jobs.c.has_dependencies, jobs.c.has_workflow)
            linked = connection.execute(select(jobs.c.id, *flags).where(batch, or_(*flags))).all()
            self.dependencies.forget(connection, [job for job, depends, _ in linked if depends])
            self.workflow.forget(connection, [job for job, _, stepped in linked if stepped])
            self.tags.forget_where(connection, select(jobs.c.id).where(batch))
            deleted = connection.execute(delete(jobs).where(batch)).rowcount
            self._add(connection, groups, hour)
            return Pruned(int(deleted), through)

        return self.database.transaction(work)

    def _lock_mark(self, connection: Connection, exclusive: bool = False) -> datetime:
        """The mark, held before anything else: for share by a retry, so a fold waits for it;
        ``exclusive`` by a fold, and by a prune, which a retry then waits for too."""
        mark = select(self.mark.c.folded_until).where(self.mark.c.id == MARK)
        locked = mark.with_for_update(read=not exclusive)
        folded_until: datetime = connection.execute(locked).scalar_one()
        return folded_until

    def _forget(
        self, connection: Connection, folded_until: datetime, finished: Iterable[Finished]
    ) -> None:
        """Take jobs leaving the finished states off their tallies if they were folded."""
        by_hour: dict[datetime, Counter[Group]] = {}
        for namespace, state, queue, task, finished_at in finished:
            if finished_at < folded_until:
                group = (namespace, state, queue, task)
                by_hour.setdefault(hour_of(finished_at), Counter())[group] -= 1
        for hour, groups in sorted(by_hour.items()):
            self._add(connection, groups, hour)

    def _add(self, connection: Connection, groups: Counter[Group], hour: datetime) -> None:
        """Add ``groups`` to the tallies, and to the hour tallies of ``hour``."""
        for group, n in sorted(groups.items()):
            namespace, *rest = group
            tally(connection, self.tallies, dict(zip(GROUPED, group, strict=True)), n)
            hourly = dict(zip(HOURLY, (namespace, hour, *rest), strict=True))
            tally(connection, self.hours, hourly, n)


def tally(connection: Connection, table: Table, key: dict[str, Any], n: int) -> None:
    """Add ``n`` to the ``jobs`` of ``table``'s row of ``key``: inserted if there is none yet,
    deleted once none is left (hour tallies would otherwise pile up, a row per group and hour
    long after the prune took their jobs)."""
    matched = and_(*(table.c[column] == value for column, value in key.items()))
    added = connection.execute(update(table).where(matched).values(jobs=table.c.jobs + n))
    if added.rowcount == 0 and n > 0:
        connection.execute(table.insert().values({**key, "jobs": n}))
    elif n < 0:
        connection.execute(delete(table).where(matched, table.c.jobs == 0))
