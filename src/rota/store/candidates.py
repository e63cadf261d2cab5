"""Which pending rows a claim takes: the candidate query, and the conditions it shares with the
idle look (a look must never see less work than a claim would).

A claim reads the claim index ``(namespace, state, queue, priority, run_at)`` in priority and
time order; only ``run_at <= now`` is due, and the jobs of a more urgent priority that are not
due yet come first in that order: read as one range, a claim walked past every one of them
(half a million rows and 250 ms, up to seconds on MariaDB, with half the backlog scheduled
ahead at a more urgent priority; issue 32). So a claim first asks which priorities each of its
queues holds due jobs at (``levels``: one seek per priority, not a row per job), then takes
them level by level, most urgent first: within a priority the due jobs are one index range.

The statements a claim runs are built once per shape (queues, priority, task set, limit) with
the time as a parameter, ``due_by``: building them again for every claim cost more CPU than
reading their rows (issue 33).

Apart from ``jobs`` so that tests and ``bench/scale`` can EXPLAIN exactly what a claim runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, Subquery, bindparam, func, literal, select, true, union_all
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import JobState
from rota.store.cluster import paused_names
from rota.store.database import Database
from rota.store.dependencies import SqlDependencies
from rota.store.dialects.claiming import row_dicts
from rota.store.kept import Kept
from rota.store.task_sets import TaskSets, set_key

T = TypeVar("T")
Due = datetime | ColumnElement[Any]
"""The time up to which a job is due: a value, or the ``due_by`` parameter of a kept statement."""
Lock = Callable[[Select[Any], Mapping[str, Any]], list[dict[str, Any]]]
"""Runs a claim's locking read with its parameters and gives its rows."""
KEPT = 512
"""Statements a claimer keeps built; past that many shapes it starts again."""

REACH = 2
"""A claim across several queues first reads the keys of ``REACH`` times the jobs it wants:
room for a second claimer at the same moment, who finds the first one's rows locked, to take
the next ones without reading every queue's best rows (``ClaimCandidates.nearest``)."""
MAX_LEVELS = 500
"""(queue, priority) pairs a claim looks for at most: past that many (a backlog spread over
hundreds of priorities), the claim reads each queue as one range, as it did before levels."""


@dataclass(frozen=True)
class Level:
    """The queues that hold due jobs at ``priority`` (``None``: at any priority)."""

    priority: int | None
    queues: tuple[str, ...]


class ClaimCandidates:
    def __init__(self, database: Database, dependencies: SqlDependencies) -> None:
        self.database = database
        self.table = database.schema.jobs
        self.dependencies = dependencies
        self.task_sets = TaskSets(database)
        self.due_by = bindparam("due_by", type_=self.table.c.run_at.type)
        self.kept: Kept[Select[Any]] = Kept(KEPT)
        """The claim's statements by shape, built with ``due_by`` for the time."""

    def levels(self, connection: Connection, queues: Sequence[str], now: datetime) -> list[Level]:
        """The priorities at which ``queues`` hold pending jobs due by ``now``, most urgent
        first, each with its queues: the order in which a claim takes them. Nothing locked.

        Read from the claim index alone, one seek per (queue, priority): MySQL's and MariaDB's
        loose index scan of a ``GROUP BY`` over the index's columns, elsewhere a recursive query
        stepping from each priority to the next (on PostgreSQL by each level's first row,
        ``levels_by_lateral``). The task, dependency and pause conditions are
        the claim's: a level may yield nothing, and the claim goes on to the next one.
        """
        shape = ("levels", tuple(queues))
        query = self.kept.get(shape, lambda: self.levels_query(queues, self.due_by))
        pairs = connection.execute(query, {"due_by": now}).all()
        if len(pairs) >= MAX_LEVELS or not all(isinstance(pair[1], int) for pair in pairs):
            # Too many levels, or a priority that is no integer (SQLite keeps what a hand
            # edit wrote): one range a queue, which takes that row and fails its job.
            return [Level(None, tuple(queues))]
        by_priority: dict[int, list[str]] = defaultdict(list)
        for pair in sorted(pairs, key=lambda pair: (pair[1], pair[0])):
            by_priority[int(pair[1])].append(str(pair[0]))
        return [Level(priority, tuple(found)) for priority, found in by_priority.items()]

    def levels_query(self, queues: Sequence[str], now: Due) -> Select[Any]:
        jobs = self.table
        pending = (self.database.mine(jobs), jobs.c.state == JobState.PENDING.value)
        if self.database.dialect.groups_by_index_skip:
            # MIN(run_at) keeps the loose scan with the range on run_at: one seek a group.
            return (
                select(jobs.c.queue, jobs.c.priority, func.min(jobs.c.run_at))
                .where(*pending, jobs.c.queue.in_(queues), jobs.c.run_at <= now)
                .group_by(jobs.c.namespace, jobs.c.state, jobs.c.queue, jobs.c.priority)
                .limit(MAX_LEVELS)
            )

        if self.database.dialect.joins_lateral:
            return self.levels_by_lateral(queues, now)

        def lowest(queue: ColumnElement[Any], above: ColumnElement[Any] | None) -> Any:
            """The most urgent priority of ``queue`` (past ``above``): one index seek."""
            later = () if above is None else (jobs.c.priority > above,)
            found = select(func.min(jobs.c.priority)).where(*pending, jobs.c.queue == queue)
            return found.where(*later).scalar_subquery()

        named = union_all(*(select(literal(queue).label("queue")) for queue in queues)).subquery()
        first = select(named.c.queue, lowest(named.c.queue, None).label("priority"))
        step = first.cte("levels", recursive=True)
        more = select(step.c.queue, lowest(step.c.queue, step.c.priority)).where(
            step.c.priority.is_not(None)
        )
        step = step.union_all(more)
        # Due by its earliest job: one seek per pair. (An EXISTS of a due job was planned as a
        # join of every due job, or as a scan of the table.)
        earliest = select(func.min(jobs.c.run_at)).where(
            *pending, jobs.c.queue == step.c.queue, jobs.c.priority == step.c.priority
        )
        due = earliest.scalar_subquery() <= now
        return select(step.c.queue, step.c.priority).where(due).limit(MAX_LEVELS)

    def levels_by_lateral(self, queues: Sequence[str], now: Due) -> Select[Any]:
        """``levels_query`` stepping by the first row of each (queue, priority) in the claim
        index's order: its priority and its ``run_at`` from one seek. On PostgreSQL the front of
        a queue's pending range holds the index entries of the rows claimed since the last
        VACUUM, which every seek there walks past; a minimum priority and then a minimum
        ``run_at`` walked past them twice a claim (issue 33)."""
        jobs = self.table
        pending = (self.database.mine(jobs), jobs.c.state == JobState.PENDING.value)

        def first(queue: ColumnElement[Any], above: ColumnElement[Any] | None) -> Any:
            later = () if above is None else (jobs.c.priority > above,)
            found = select(jobs.c.priority, jobs.c.run_at).where(
                *pending, jobs.c.queue == queue, *later
            )
            return found.order_by(jobs.c.priority, jobs.c.run_at).limit(1).lateral()

        named = union_all(*(select(literal(queue).label("queue")) for queue in queues)).subquery()
        head = first(named.c.queue, None)
        start = select(named.c.queue, head.c.priority, head.c.run_at)
        step = start.join_from(named, head, true()).cte("levels", recursive=True)
        after = first(step.c.queue, step.c.priority)
        more = select(step.c.queue, after.c.priority, after.c.run_at).join_from(step, after, true())
        step = step.union_all(more)
        return select(step.c.queue, step.c.priority).where(step.c.run_at <= now).limit(MAX_LEVELS)

    def take(
        self,
        connection: Connection,
        levels: Sequence[Level],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        also: Sequence[ColumnElement[bool]] = (),
        lock: Lock | None = None,
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` candidates of ``levels``, read and locked level by level: ``lock``
        runs each locking read and gives its rows (by default it reads them; a claim also
        updates them as it goes)."""

        def read(query: Select[Any], parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
            return row_dicts(connection.execute(query, parameters))

        def rows(level: Level, want: int) -> list[dict[str, Any]]:
            return self.rows(level, tasks, want, now, also, lock or read)

        return by_level(levels, limit, rows)

    def rows(
        self,
        level: Level,
        tasks: Sequence[str],
        want: int,
        now: datetime,
        also: Sequence[ColumnElement[bool]],
        lock: Lock,
    ) -> list[dict[str, Any]]:
        """What a claim takes of ``level``: ``lock`` runs a locking read (``nearest``, then
        ``query`` for what it left wanting) and gives its rows.

        Across several queues, ``nearest`` reads only the index keys of the queues' best
        candidates; the jobs it cannot take (another's task, a dependency not met, a row
        another claimer holds) may hide more behind them, so a claim left short asks ``query``,
        which reads every queue's best jobs, for the rest.  Without ``also`` (flow control's
        conditions) both statements are kept built (``kept``).
        """
        due_by, tasks_key = self.due_by, set_key(tasks)
        parameters = {"due_by": now}

        def statement(kind: str, build: Callable[[], Select[Any]], left: int) -> Select[Any]:
            if also:
                return build()
            return self.kept.get((kind, level, tasks_key, left), build)

        taken: list[dict[str, Any]] = []
        if len(level.queues) > 1:
            nearest = statement(
                "nearest", lambda: self.nearest(level, tasks, want, due_by, also), want
            )
            taken = lock(nearest, parameters)
            if len(taken) >= want:
                return taken
            if taken:
                also = (*also, self.table.c.id.not_in([row["id"] for row in taken]))
        left = want - len(taken)
        query = statement(
            "query",
            lambda: self.query(level.queues, tasks, left, due_by, also, level.priority),
            left,
        )
        return taken + lock(query, parameters)

    def nearest(
        self,
        level: Level,
        tasks: Sequence[str],
        limit: int,
        now: Due,
        also: Sequence[ColumnElement[bool]] = (),
    ) -> Select[Any]:
        """The best ``limit`` takeable jobs among the ``REACH * limit`` best due ones of
        ``level``'s queues, found from the claim index alone and locked by id.

        Each queue gives the keys of its best due jobs (priority, run_at, id: the claim index
        holds them all, so neither server reads a row for them); merged, the best ``REACH *
        limit`` are exactly the best of all the queues. Only their rows are read, in that order,
        until ``limit`` are taken: a few pages a queue where reading each queue's best rows
        read hundreds.
        """
        ordered, reach = self._ordered(), REACH * limit

        def keys(queue: str) -> Select[Any]:
            where = (*self.open([queue], now), *self._at(level.priority))
            return select(*ordered).where(*where).order_by(*ordered).limit(reach)

        merged = self._merged([keys(queue) for queue in level.queues])
        best = select(*merged.c).order_by(*merged.c).limit(reach).subquery("candidates")
        holds = self.task_sets.holds(set_key(tasks), self.table.c.task)
        return self._locked_in_order(best, limit, (holds, self.dependencies.satisfied(), *also))

    def query(
        self,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: Due,
        also: Sequence[ColumnElement[bool]] = (),
        priority: int | None = None,
    ) -> Select[Any]:
        """The rows a claim takes and locks (``also``: more conditions, as flow control adds),
        at ``priority`` (a level) or at any, read from every queue's best takeable jobs.

        One queue is one range of the claim index, read in priority and time order and locked
        as it is read, so a claim reads and locks the rows it takes. For several queues no index
        gives that order: ``queue IN (...)`` read, sorted and (on MySQL) locked every pending
        row, 200,000 locks and 200 ms a claim at 100,000 pending (issue 32). So each queue gives
        its own best ``limit`` unlocked, and the rows are locked by id in the order of the
        merged candidates: a row another claimer holds is skipped for the next candidate.
        """
        ordered = self._ordered()

        def best(names: Sequence[str]) -> Select[Any]:
            where = (*self.due(names, tasks, now), *self._at(priority))
            where = (*where, self.dependencies.satisfied(), *also)
            return select(self.table).where(*where).order_by(*ordered).limit(limit)

        if len(queues) == 1:
            return self.database.dialect.lock_for_claim(best(queues))
        branches = [best([queue]).with_only_columns(*ordered) for queue in queues]
        return self._locked_in_order(self._merged(branches, "candidates"), limit, ())

    def _ordered(self) -> tuple[ColumnElement[Any], ...]:
        """The order a claim takes jobs in, which the claim index holds whole."""
        jobs = self.table
        return (jobs.c.priority, jobs.c.run_at, jobs.c.id)

    def _merged(self, branches: Sequence[Select[Any]], name: str | None = None) -> Subquery:
        """The keys (priority, run_at, id) each of ``branches`` gives, together."""
        subqueries = [branch.subquery() for branch in branches]
        return union_all(*(select(*subquery.c) for subquery in subqueries)).subquery(name)

    def _locked_in_order(
        self, keys: Subquery, limit: int, where: Sequence[ColumnElement[bool]]
    ) -> Select[Any]:
        """The best ``limit`` pending jobs of ``keys`` meeting ``where``, read by id in the
        keys' order and locked as they are read (a row another claimer holds is skipped)."""
        jobs = self.table
        query = (
            select(jobs)
            .join(keys, keys.c.id == jobs.c.id)
            .where(jobs.c.state == JobState.PENDING.value, *where)
            .order_by(*keys.c)
            .limit(limit)
        )
        return self.database.dialect.lock_for_claim(query, of=jobs)

    def due(
        self, queues: Sequence[str], tasks: Sequence[str], now: Due
    ) -> list[ColumnElement[bool]]:
        """A pending job of this namespace's ``tasks`` in an open queue of ``queues`` whose time
        has come: what a claim asks of its candidates besides their dependencies, and what the
        idle look asks too.

        The paused queues are a subquery, read and not locked (a locking read locks the rows of
        its own tables only, on MySQL and PostgreSQL): a claim is one round trip fewer than with
        them read first, and still sees a pause committed before it began.  The tasks are
        named by their set (``task_sets``), whose rows must be written first, in a
        transaction of their own: the claim and the look ask ``task_sets.key`` before theirs.
        """
        return [*self.open(queues, now), self.task_sets.holds(set_key(tasks), self.table.c.task)]

    def open(self, queues: Sequence[str], now: Due) -> list[ColumnElement[bool]]:
        """A pending job of this namespace in an open queue of ``queues`` whose time has come:
        the conditions of ``due`` that the claim index answers alone."""
        jobs = self.table
        queue_match = jobs.c.queue == queues[0] if len(queues) == 1 else jobs.c.queue.in_(queues)
        return [
            self.database.mine(jobs),
            jobs.c.state == JobState.PENDING.value,
            queue_match,
            jobs.c.queue.not_in(paused_names(self.database)),
            jobs.c.run_at <= now,
        ]

    def _at(self, priority: int | None) -> tuple[ColumnElement[bool], ...]:
        """A level's priority as a condition (none for a level of every priority)."""
        return () if priority is None else (self.table.c.priority == priority,)


def by_level(levels: Sequence[Level], limit: int, take: Callable[[Level, int], list[T]]) -> list[T]:
    """What ``take`` gives of each level (and how many are still wanted), most urgent level
    first, until ``limit`` are taken."""
    taken: list[T] = []
    for level in levels:
        taken += take(level, limit - len(taken))
        if len(taken) >= limit:
            break
    return taken
