"""The claim of jobs whose tasks have a concurrency or rate limit, in the claim's transaction.

Each limit key has a row in the limits table.  A claim locks the rows of the keys it is about
to start (``FOR UPDATE SKIP LOCKED``: a key another claim holds is passed over, never waited
for), then counts the key's running jobs whose lease is live (a dead worker's slot frees when
its lease expires) and reads the rate's tokens: two claims of one key take turns, so the limit
holds across any number of workers.  The count is read after the lock, so it sees every claim
of that key that committed before.

No head-of-line blocking: the candidate query leaves out keys known to be full (those its own
count of the running jobs finds full, a hint read without a lock, then those the count
after the lock finds full; a rate key used up stays so until its window ends), and the claim
looks again in up to ``ROUNDS`` rounds past the keys it found full or held by another claim, so
a hot key with a thousand waiting jobs never hides the cold keys' jobs behind it.  Cost per
claim over the plain one: the lock of the keys' rows, the count of their running jobs (by the
concurrency key's index), one write of the rates' tokens (if any) and, when a round finds
full keys or keys held by another claim, one more candidate query.

A job written without keys (queued by name from a process that lacks the definition, made by
a schedule, or queued before the task had a limit) gets them here, from its arguments and
the claiming worker's definition, written to the row whether or not it starts now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, case, delete, func, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core import payload
from rota.core.limits import Candidate, FlowLimits, admit
from rota.errors import RotaError
from rota.store.database import Database
from rota.store.rows import RUNNING

ROUNDS = 4
"""Candidate queries per claim at most: each one looks past the keys the previous found full."""

CandidateQuery = Callable[[int, Sequence[ColumnElement[bool]]], list[dict[str, Any]]]
"""The plain candidate query (due, pending, open queue, known task) for up to n jobs that
also meet the conditions given (which the query applies before its limit)."""


@dataclass
class _Held:
    """What this claim has learnt of the keys whose rows it locked."""

    free: dict[str, int] = field(default_factory=dict)
    """Running slots left, per concurrency key held."""
    tokens: dict[str, int] = field(default_factory=dict)
    """Starts left in the current window, per rate key held."""
    initial: dict[str, int] = field(default_factory=dict)
    rates: dict[str, FlowLimits] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    """Keys looked up, held or not: a key held by another claim stays blocked this time."""
    flows: Mapping[str, FlowLimits] = field(default_factory=dict)


class FlowClaims:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.table = database.schema.limits
        self.mine = database.mine(self.table)
        self._exhausted: dict[str, datetime] = {}
        """Rate keys used up, until their window ends: a hint that spares the candidate query
        their jobs (a window's tokens only ever go down)."""
        self._uncommitted: dict[str, datetime] = {}

    def committed(self) -> None:
        """The claim's transaction committed: what it used up is used up."""
        self._exhausted.update(self._uncommitted)
        self._uncommitted = {}

    def claim(
        self,
        connection: Connection,
        candidates: CandidateQuery,
        flows: Mapping[str, FlowLimits],
        limit: int,
        now: datetime,
        values: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` candidates that the limits of ``flows`` (by task) let start, marked
        running with ``values``; the rows as they now are.

        The candidate query leaves out the keys full now (``_full_keys``, a hint); the count
        that decides is the one after the lock, of the locked keys alone."""
        self._uncommitted = {}
        self._exhausted = {key: end for key, end in self._exhausted.items() if end > now}
        jobs = self.jobs
        held = _Held(flows=flows)
        blocked: set[str] = set()
        full = self._full_keys(flows, now)
        blocked_rates = set(self._exhausted)
        chosen: list[dict[str, Any]] = []
        for _ in range(ROUNDS):
            want = limit - len(chosen)
            also: list[ColumnElement[bool]] = []
            if full is not None:
                also.append(_outside(jobs.c.concurrency_key, full))
            if blocked:
                also.append(_outside(jobs.c.concurrency_key, blocked))
            if blocked_rates:
                also.append(_outside(jobs.c.rate_key, blocked_rates))
            if chosen:
                also.append(jobs.c.id.not_in([row["id"] for row in chosen]))
            rows = candidates(want, also)
            self._fill_keys(connection, rows, flows)
            found = [_candidate(row) for row in rows]
            concurrency, rates = _limited_keys(found, flows)
            self._lock(connection, concurrency, rates, held, now)
            admitted = set(admit(found, flows, held.free, held.tokens))
            chosen.extend(row for row in rows if row["id"] in admitted)
            blocked.update(key for key in held.seen if held.free.get(key, 1) <= 0)
            blocked.update(key for key in concurrency if key not in held.free)
            blocked_rates.update(key for key in rates if held.tokens.get(key, 0) <= 0)
            if len(chosen) >= limit or len(rows) < want:
                break  # all taken, or nothing more is due past the keys full or held
        self._take_tokens(connection, held, now)
        return self.database.dialect.claim_rows(connection, jobs, chosen, values)

    def _fill_keys(
        self, connection: Connection, rows: list[dict[str, Any]], flows: Mapping[str, FlowLimits]
    ) -> None:
        """Resolve and write the keys that rows of limited tasks lack, in one statement (a
        ``CASE`` on the id, not one statement per row)."""
        filled: list[dict[str, Any]] = []
        for row in rows:
            flow = flows.get(row["task"])
            if flow is None:
                continue
            lacks = (flow.concurrency and row["concurrency_key"] is None) or (
                flow.rate and row["rate_key"] is None
            )
            if not lacks:
                continue
            concurrency_key, rate_key = _resolve(flow, row["payload"])
            row["concurrency_key"] = row["concurrency_key"] or concurrency_key
            row["rate_key"] = row["rate_key"] or rate_key
            filled.append(row)
        if filled:
            jobs = self.jobs
            ids = [row["id"] for row in filled]

            def by_id(column: str) -> Any:
                return case({row["id"]: row[column] for row in filled}, value=jobs.c.id)

            statement = (
                update(jobs)
                .where(jobs.c.id.in_(ids))
                .values(concurrency_key=by_id("concurrency_key"), rate_key=by_id("rate_key"))
            )
            connection.execute(statement)

    def _lock(
        self,
        connection: Connection,
        concurrency: Mapping[str, FlowLimits],
        rates: Mapping[str, FlowLimits],
        held: _Held,
        now: datetime,
    ) -> None:
        """Lock the rows of the keys not looked up yet, then count and read what they allow."""
        keys = sorted((set(concurrency) | set(rates)) - held.seen)
        if not keys:
            return
        held.seen.update(keys)
        locked = self._lock_rows(connection, keys, now)
        counted = [key for key in concurrency if key in locked]
        if counted:
            running = self._running(connection, held.flows, now, counted)
            for key in counted:
                limit = concurrency[key].concurrency or 0
                held.free[key] = limit - running.get(key, ("", 0))[1]
        for key, flow in rates.items():
            if key in locked and flow.rate is not None:
                tokens, window = locked[key]
                held.tokens[key] = held.initial[key] = flow.rate.available(tokens, window, now)
                held.rates[key] = flow

    def _lock_rows(
        self, connection: Connection, keys: list[str], now: datetime
    ) -> dict[str, tuple[float | None, datetime | None]]:
        """``{key: (tokens, window)}`` of the rows this claim now holds, made where missing;
        a key whose row another claim holds is left out."""
        locked = self._select_locked(connection, keys)
        missing = [key for key in keys if key not in locked]
        if missing:
            limits = self.table
            present = select(limits.c.key).where(self.mine, limits.c.key.in_(missing))
            exists = set(connection.execute(present).scalars())
            absent = [key for key in missing if key not in exists]
            if absent:
                namespace = self.database.namespace
                rows = [
                    {"namespace": namespace, "key": key, "tokens": None, "updated_at": now}
                    for key in absent
                ]
                connection.execute(self.database.dialect.insert_ignoring_duplicates(limits), rows)
                locked.update(self._select_locked(connection, absent))
        return locked

    def _select_locked(
        self, connection: Connection, keys: list[str]
    ) -> dict[str, tuple[float | None, datetime | None]]:
        limits = self.table
        query = self.database.dialect.lock_for_claim(
            select(limits.c.key, limits.c.tokens, limits.c.updated_at).where(
                self.mine, limits.c.key.in_(keys)
            )
        )
        return {key: (tokens, at) for key, tokens, at in connection.execute(query)}

    def prune(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` key rows last written before ``before`` (a key of a task no
        longer limited, an account gone): a row only serializes the claims of its key, and a
        rate window lasts at most an hour, so an old row holds nothing a claim needs; the next
        claim of its key makes it again.  Rows a claim holds now are passed over."""
        table = self.table
        old = select(table.c.key).where(self.mine, table.c.updated_at < before).limit(limit)

        def work(connection: Connection) -> int:
            keys = list(connection.execute(self.database.dialect.lock_for_claim(old)).scalars())
            if keys:
                connection.execute(delete(table).where(self.mine, table.c.key.in_(keys)))
            return len(keys)

        return self.database.transaction(work)

    def _full_keys(self, flows: Mapping[str, FlowLimits], now: datetime) -> Select[Any] | None:
        """The concurrency keys full now, a subquery of the candidate query: a hint read without
        a lock (in the candidate statement's snapshot, which spares a statement), that keeps
        their jobs out of the candidates, so one round usually fills the claim even when most
        keys are running.  Counted per task and key, it may miss that a key shared by tasks is
        full (the count after the lock decides) but never leaves out a key that is not."""
        limits = {task: flow.concurrency for task, flow in flows.items() if flow.concurrency}
        if not limits:
            return None
        running = self.jobs.alias("running")
        return (
            select(running.c.concurrency_key)
            .where(
                running.c.namespace == self.database.namespace,
                running.c.state == RUNNING,
                running.c.lease_until >= now,
                running.c.task.in_(sorted(limits)),
                running.c.concurrency_key.is_not(None),
            )
            .group_by(running.c.task, running.c.concurrency_key)
            .having(func.count() >= case(limits, value=running.c.task))
        )

    def _running(
        self,
        connection: Connection,
        flows: Mapping[str, FlowLimits],
        now: datetime,
        keys: Sequence[str],
    ) -> dict[str, tuple[str, int]]:
        """``{key: (task, running)}`` over the running jobs of ``keys`` (those just locked: the
        index on the key serves it) of concurrency-limited tasks whose lease is live."""
        tasks = [task for task, flow in flows.items() if flow.concurrency]
        jobs = self.jobs
        query = (
            select(jobs.c.task, jobs.c.concurrency_key, func.count())
            .where(
                self.database.mine(jobs),
                jobs.c.state == RUNNING,
                jobs.c.lease_until >= now,
                jobs.c.task.in_(tasks),
                jobs.c.concurrency_key.in_(sorted(keys)),
            )
            .group_by(jobs.c.task, jobs.c.concurrency_key)
        )
        counts: dict[str, tuple[str, int]] = {}
        for task, key, n in connection.execute(query):
            previous = counts.get(key, (task, 0))[1]
            counts[key] = (task, previous + int(n))
        return counts

    def _take_tokens(self, connection: Connection, held: _Held, now: datetime) -> None:
        """Write each rate key's tokens left in its window, in one statement."""
        updates: list[dict[str, Any]] = []
        for key, left in held.tokens.items():
            rate = held.rates[key].rate
            if rate is None or left == held.initial[key]:
                continue
            window = rate.window(now)
            updates.append({"b_key": key, "b_tokens": float(left), "b_window": window})
            if left <= 0:
                self._uncommitted[key] = window + timedelta(seconds=rate.period)
        if updates:
            limits = self.table
            statement = (
                update(limits)
                .where(self.mine, limits.c.key == bindparam("b_key"))
                .values(tokens=bindparam("b_tokens"), updated_at=bindparam("b_window"))
            )
            connection.execute(statement, updates)


def _outside(column: Any, keys: set[str] | Select[Any]) -> ColumnElement[bool]:
    """The column is no key of ``keys`` (a job without a key always is)."""
    return or_(column.is_(None), column.not_in(keys if isinstance(keys, Select) else sorted(keys)))


def _resolve(flow: FlowLimits, stored: str) -> tuple[str | None, str | None]:
    """A job's keys from its stored arguments; the per-task keys if they cannot be read or
    the key cannot be resolved from them."""
    try:
        args, kwargs, _ = payload.decode(stored)
        return flow.keys(args, kwargs)
    except RotaError:
        return flow.fallback_keys()


def _candidate(row: Mapping[str, Any]) -> Candidate:
    return Candidate(row["id"], row["task"], row["concurrency_key"], row["rate_key"])


def _limited_keys(
    found: Sequence[Candidate], flows: Mapping[str, FlowLimits]
) -> tuple[dict[str, FlowLimits], dict[str, FlowLimits]]:
    """The concurrency and rate keys the candidates count against, with their task's limits."""
    concurrency: dict[str, FlowLimits] = {}
    rates: dict[str, FlowLimits] = {}
    for candidate in found:
        flow = flows.get(candidate.task)
        if flow is not None and flow.concurrency and candidate.concurrency_key:
            concurrency.setdefault(candidate.concurrency_key, flow)
        if flow is not None and flow.rate and candidate.rate_key:
            rates.setdefault(candidate.rate_key, flow)
    return concurrency, rates
