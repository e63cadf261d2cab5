"""Job dependencies in SQL: checked and linked at enqueue, waited for by the claim, and
cancelled down the graph when a dependency ends badly.

A dependent is an ordinary ``pending`` row with ``has_dependencies`` set and one row per
dependency in ``<prefix>dependencies``.  Nothing is written when a dependency succeeds: the
claim asks, of flagged candidates only, whether a dependency has yet to succeed, so a success
costs nothing more and a job without dependencies pays one boolean test.  Failure travels the
other way: the transaction that ends a job ``failed`` or ``cancelled`` also cancels its waiting
dependents, and theirs, with ``DEPENDENCY_FAILED``, so no dependent waits for ever.

A link marked ``until_final`` only waits: it holds its job until the other one has ended,
whatever its end, and never cancels it.  The scheduler writes them (``overlap="queue"``, so a
tick waits for the schedule's previous run); they are not the job's ``depends_on``.

The race between the two directions is closed by locks: enqueue reads its dependencies
``FOR SHARE`` (SQLite: the single writer), so a dependency cannot end while its dependent is
being written unseen; the ending transaction waits, then finds the new link and cancels it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, false, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import AttemptError, JobRef, JobState
from rota.errors import ErrorCode, InvalidArguments
from rota.store.database import Database
from rota.store.rows import UNSTARTED, _attempt_errors, errors_json, released_key
from rota.store.unique import UniqueKeys
from rota.store.values import Cascaded

SUCCEEDED = JobState.SUCCEEDED.value
CANCELLED = JobState.CANCELLED.value
ENDED_BADLY = frozenset({JobState.FAILED, JobState.CANCELLED})
"""Final states that cancel a job's dependents."""
ENDED_VALUES = sorted(state.value for state in ENDED_BADLY)
CHUNK = 500
"""Ids per ``IN`` list or rows per INSERT: well under every backend's parameter limit."""


class SqlDependencies:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.links = database.schema.dependencies

    def satisfied(self) -> ColumnElement[bool]:
        """The claim's predicate: no dependency, or none still there that has not succeeded.

        A dependency that is gone was pruned, so it had finished; had it ended badly this job
        would have been cancelled with it, hence a missing one counts as satisfied.  Served by
        the links' primary key (``job_id`` first) and the jobs' primary key, per candidate: the
        ``OFFSET 0`` keeps PostgreSQL from hashing every unfinished job once per claim, and
        MariaDB from materializing every link.
        """
        return or_(self.jobs.c.has_dependencies == false(), ~self._blocking().offset(0).exists())

    def unblocked(self) -> ColumnElement[bool]:
        """No dependency of the job is still there without having succeeded (alone, with no
        ``OR`` around it, PostgreSQL plans it as an anti-join on the links' primary key)."""
        return ~self._blocking().exists()

    def _blocking(self) -> Select[Any]:
        jobs, links = self.jobs, self.links
        parent = jobs.alias("dependency")
        return (
            select(links.c.depends_on)
            .join(parent, parent.c.id == links.c.depends_on)
            .where(
                links.c.job_id == jobs.c.id,
                parent.c.state != SUCCEEDED,
                or_(links.c.until_final == false(), parent.c.state.not_in(ENDED_VALUES)),
            )
        )

    def prepare(
        self,
        connection: Connection,
        rows: list[dict[str, Any]],
        waits: list[tuple[int, ...]],
        afters: list[tuple[int, ...]],
        now: datetime,
    ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        """Check the dependencies (``waits``) and the jobs waited for whatever their end
        (``afters``) of the rows about to be inserted, before anything is written.

        Each is locked for share and must exist (``InvalidArguments`` otherwise).  A row one of
        whose dependencies already failed or was cancelled is written ``cancelled`` with
        ``DEPENDENCY_FAILED``, as it would have been a moment later.  A row whose unique key a
        live job holds will not be written (that job's id is returned, with its own links), so
        it gets no links: the dependencies and the afters to link, per row.
        """
        every = {parent for wait in (*waits, *afters) for parent in wait}
        states = self._lock(connection, every)
        linked, after = list(waits), list(afters)
        for index, (row, wait) in enumerate(zip(rows, waits, strict=True)):
            if not wait and not afters[index]:
                continue
            if row["unique_key"] is not None and self._live_duplicate(connection, row, now):
                linked[index] = after[index] = ()
                continue
            ended = next((parent for parent in wait if states[parent] in ENDED_BADLY), None)
            if ended is not None:
                error = _failure(0, now, ended, states[ended], "had already ")
                row.update(
                    state=CANCELLED,
                    finished_at=now,
                    unique_key=None,
                    errors=errors_json([error]),
                    error_code=ErrorCode.DEPENDENCY_FAILED.value,
                )
        return linked, after

    def _lock(self, connection: Connection, ids: set[int]) -> dict[int, JobState]:
        jobs = self.jobs
        states: dict[int, JobState] = {}
        ordered = sorted(ids)
        for chunk in _chunks(ordered):
            query = select(jobs.c.id, jobs.c.state).where(jobs.c.id.in_(chunk))
            for job_id, state in connection.execute(query.with_for_update(read=True)):
                states[job_id] = JobState.stored(state)
        missing = [job_id for job_id in ordered if job_id not in states]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
            raise InvalidArguments(f"depends_on or after names jobs that do not exist: {shown}")
        return states

    def _live_duplicate(self, connection: Connection, row: dict[str, Any], now: datetime) -> bool:
        return UniqueKeys(self.database).holder(connection, row, now) is not None

    def link(
        self,
        connection: Connection,
        ids: Sequence[int],
        waits: Sequence[tuple[int, ...]],
        until_final: bool = False,
    ) -> None:
        """One row per (job, dependency); a duplicate (two identical unique requests racing)
        is skipped rather than failing the enqueue."""
        rows = [
            {"job_id": job_id, "depends_on": parent, "until_final": until_final}
            for job_id, wait in zip(ids, waits, strict=True)
            for parent in wait
        ]
        dialect = self.database.dialect
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            connection.execute(dialect.insert_ignoring_duplicates(self.links), chunk)

    def cascade(
        self, connection: Connection, ended: Iterable[int], now: datetime
    ) -> list[Cascaded]:
        """Cancel the waiting dependents of the jobs that have just ended, level by level,
        each with an error naming the dependency that ended it; those cancelled.

        ``ended`` may name jobs whose transition did not apply (a late worker's): only those
        now ``failed`` or ``cancelled`` count.  The common case, a job nothing depends on,
        costs one read of the ``depends_on`` index.  Dependencies point to older jobs only,
        so the graph has no cycle and the loop ends.
        """
        frontier = sorted(set(ended))
        cancelled: list[Cascaded] = []
        while frontier:
            waiting = self._waiting_on(connection, frontier)
            level = self._cancel(connection, waiting, now)
            cancelled.extend(level)
            frontier = [each.job.id for each in level]
        return cancelled

    def _waiting_on(
        self, connection: Connection, ids: Sequence[int]
    ) -> dict[int, tuple[int, JobState]]:
        """The jobs linked to those of ``ids`` that ended badly, each with the first such
        dependency (lowest id) and its state."""
        links = self.links
        found: dict[int, list[int]] = defaultdict(list)
        for chunk in _chunks(ids):
            query = select(links.c.job_id, links.c.depends_on).where(
                links.c.depends_on.in_(chunk), links.c.until_final == false()
            )
            for job_id, parent in connection.execute(query):
                found[job_id].append(parent)
        if not found:
            return {}
        ended = self._states(connection, {parent for wait in found.values() for parent in wait})
        waiting: dict[int, tuple[int, JobState]] = {}
        for job_id, wait in found.items():
            parent = min((parent for parent in wait if parent in ended), default=None)
            if parent is not None:
                waiting[job_id] = (parent, ended[parent])
        return waiting

    def _cancel(
        self, connection: Connection, waiting: dict[int, tuple[int, JobState]], now: datetime
    ) -> list[Cascaded]:
        """Cancel those of ``waiting`` still pending or paused, rows locked first so that their
        errors are appended to, not overwritten; one UPDATE per distinct errors value (one per
        dependency, in the usual case of jobs that never ran).  Those cancelled, by id."""
        jobs = self.jobs
        updates: dict[str, list[int]] = defaultdict(list)
        cancelled: list[Cascaded] = []
        for chunk in _chunks(sorted(waiting)):
            query = (
                select(jobs.c.id, jobs.c.task, jobs.c.queue, jobs.c.schedule)
                .add_columns(jobs.c.attempt, jobs.c.errors)
                .where(jobs.c.id.in_(chunk), jobs.c.state.in_(UNSTARTED))
                .with_for_update()
            )
            for row in connection.execute(query):
                parent, state = waiting[row.id]
                error = _failure(row.attempt, now, parent, state, "")
                updates[errors_json([*_attempt_errors(row.errors, []), error])].append(row.id)
                job = JobRef(row.id, row.task, row.queue, row.attempt, row.schedule)
                cancelled.append(Cascaded(job, error))
        for errors, ids in updates.items():
            for chunk in _chunks(ids):
                connection.execute(
                    update(jobs)
                    .where(jobs.c.id.in_(chunk), jobs.c.state.in_(UNSTARTED))
                    .values(
                        state=CANCELLED,
                        finished_at=now,
                        unique_key=released_key(jobs),
                        errors=errors,
                        error_code=ErrorCode.DEPENDENCY_FAILED.value,
                    )
                )
        return sorted(cancelled, key=lambda each: each.job.id)

    def _states(self, connection: Connection, ids: set[int]) -> dict[int, JobState]:
        """The jobs among ``ids`` that ended badly, with their state."""
        jobs = self.jobs
        found: dict[int, JobState] = {}
        bad = [state.value for state in ENDED_BADLY]
        for chunk in _chunks(sorted(ids)):
            query = select(jobs.c.id, jobs.c.state).where(
                and_(jobs.c.id.in_(chunk), jobs.c.state.in_(bad))
            )
            found.update(
                (job_id, JobState.stored(state)) for job_id, state in connection.execute(query)
            )
        return found

    def depends_on(self, connection: Connection, job_id: int) -> tuple[int, ...]:
        links = self.links
        query = select(links.c.depends_on).where(
            links.c.job_id == job_id, links.c.until_final == false()
        )
        return tuple(connection.execute(query.order_by(links.c.depends_on)).scalars())

    def dependents(self, connection: Connection, job_id: int, limit: int) -> list[int]:
        """Jobs that depend on ``job_id``, lowest id first, read from the ``depends_on``
        index."""
        links = self.links
        query = select(links.c.job_id).where(
            links.c.depends_on == job_id, links.c.until_final == false()
        )
        return list(connection.execute(query.order_by(links.c.job_id).limit(limit)).scalars())

    def forget(self, connection: Connection, job_ids: Sequence[int]) -> None:
        """Delete the links of pruned jobs.  Links to them from jobs still kept stay, shown on
        those jobs' pages, and go when those jobs are pruned in turn."""
        for chunk in _chunks(list(job_ids)):
            connection.execute(delete(self.links).where(self.links.c.job_id.in_(chunk)))


def _failure(
    attempt: int, now: datetime, parent: int, state: JobState, already: str
) -> AttemptError:
    return AttemptError(
        attempt=attempt,
        at=now,
        code=ErrorCode.DEPENDENCY_FAILED,
        type="DependencyFailed",
        message=f"job {parent}, which this one depends on, {already}ended {state.value}",
    )


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]
