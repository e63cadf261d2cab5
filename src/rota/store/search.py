"""``rota.find`` and the jobs a bulk action reaches, in SQL: a ``Filter`` as a WHERE clause,
each field on an index (the claim index for state and queue, ``ix_jobs_task``,
``ix_jobs_created``, ``ix_jobs_error``, the finished-jobs index, the tick key for a schedule,
the tags table's index for tags), newest job first, paged by id (a keyset: no ``OFFSET``).

``args_match`` is the one field no index serves: rows the other fields let through are decoded
and matched in Python (``core.search.arguments_match``), at most ``ARGS_SCANNED`` a page.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import FromClause, Select, and_, desc, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import Job, JobState, seen_state
from rota.core.search import ARGS_SCANNED, BulkAction, Filter, arguments_match
from rota.store.cluster import paused_names
from rota.store.database import Database
from rota.store.rows import in_states, to_job
from rota.store.tags import JobTags

SCAN_CHUNK = 500
"""Rows read at a time while matching arguments."""
Source = tuple[FromClause, ColumnElement[int], list[ColumnElement[bool]]]
"""A statement's tables, the id column it orders by, and its conditions."""
Scanned = tuple[list[Job], int | None]
"""Jobs found, and the id the next page starts below (``None``: nothing is left)."""


class SqlSearch:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.tags = JobTags(database)

    def where(self, matching: Filter, *, namespaced: bool = True) -> list[ColumnElement[bool]]:
        """``matching`` as conditions on the jobs table (``args_match`` aside), in this
        store's namespace unless the caller keeps to it otherwise."""
        jobs = self.jobs
        found = [self.database.mine(jobs)] if namespaced else []
        if matching.state:
            found.append(in_states(jobs.c.state, matching.state))
        elif matching.queue:
            # Every state, as ranges of the claim index, so that a queue alone is sought there.
            found.append(in_states(jobs.c.state, tuple(JobState)))
        for column, values in (("task", matching.task), ("queue", matching.queue)):
            if values:
                found.append(jobs.c[column].in_(values))
        for column, value in (("schedule", matching.schedule), ("error_code", matching.error_code)):
            if value is not None:
                found.append(jobs.c[column] == value)
        for column, low, high in (
            ("created_at", matching.created_after, matching.created_before),
            ("finished_at", matching.finished_after, matching.finished_before),
        ):
            if low is not None:
                found.append(jobs.c[column] >= low)
            if high is not None:
                found.append(jobs.c[column] < high)
        return found

    def _source(self, matching: Filter, *, jobs_read: bool = True) -> Source:
        """What a statement reads: the jobs table, or with tags one alias of the tags table per
        tag, the first one's entries walked newest job first (its index is ``(namespace, tag,
        job_id)``) and joined to the others and to the job by id; and the id column that
        orders and pages.  Without ``jobs_read`` (a count by tags alone) the tags suffice:
        a job's tags go with it."""
        jobs, namespace = self.jobs, self.database.namespace
        if not matching.tags:
            return jobs, jobs.c.id, list(self.where(matching))
        first, *others = (self.tags.table.alias(f"tag{n}") for n in range(len(matching.tags)))
        conditions = [first.c.namespace == namespace, first.c.tag == matching.tags[0]]
        source: FromClause = first
        for alias, tag in zip(others, matching.tags[1:], strict=True):
            on = and_(alias.c.job_id == first.c.job_id, alias.c.namespace == namespace)
            source = source.join(alias, and_(on, alias.c.tag == tag))
        if jobs_read:
            # A tag's row holds its job's namespace: the job is read by id alone, never sought
            # through an index of the namespace's (which a planner without statistics, as on a
            # table just filled, may walk once per tag).
            source = source.join(jobs, jobs.c.id == first.c.job_id)
            conditions += self.where(matching, namespaced=False)
        return source, first.c.job_id, conditions

    def find(self, matching: Filter, limit: int, before: int | None) -> Scanned:
        """Up to ``limit`` jobs newest first, below id ``before``, with their tags; one row
        more is read, to tell whether a next page has any."""

        def work(connection: Connection) -> Scanned:
            found, after = self._scan(connection, matching, limit, before)
            return self._dressed(connection, found), after

        return self.database.transaction(work)

    def matching(
        self, matching: Filter, limit: int, before: int | None
    ) -> tuple[list[int], int | None]:
        """The ids of up to ``limit`` matching jobs below ``before`` (a bulk action's batch),
        and the id the next batch starts below."""
        if matching.args_match is not None:

            def work(connection: Connection) -> tuple[list[int], int | None]:
                found, after = self._scan(connection, matching, limit, before)
                return [job.id for job in found], after

            return self.database.transaction(work)
        page = self._page(matching, before, limit + 1)
        ids = [job_id for (job_id,) in self.database.fetch(page)]
        return ids[:limit], ids[limit - 1] if len(ids) > limit else None

    def count(self, matching: Filter) -> int:
        """Exact; with ``args_match``, every row the other fields let through is read."""
        if matching.args_match is None:
            alone = replace(matching, tags=(), namespace=None).empty
            source, _, conditions = self._source(matching, jobs_read=not alone)
            query = select(func.count()).select_from(source).where(*conditions)
            return int(self.database.fetch(query)[0][0])
        total, before = 0, None
        while True:
            ids, before = self.matching(matching, ARGS_SCANNED, before)
            total += len(ids)
            if before is None:
                return total

    def _page(self, matching: Filter, before: int | None, limit: int) -> Select[Any]:
        """The ids of matching jobs below ``before``, newest first."""
        source, ids, conditions = self._source(matching)
        query = select(ids).select_from(source).where(*conditions)
        if before is not None:
            query = query.where(ids < before)
        return query.order_by(desc(ids)).limit(limit)

    def _scan(
        self, connection: Connection, matching: Filter, limit: int, before: int | None
    ) -> Scanned:
        """Matching jobs below ``before``: a page of rows, or with ``args_match`` rows read a
        chunk at a time until ``limit`` match or ``ARGS_SCANNED`` were read."""
        if matching.args_match is None:
            rows = self._rows(connection, self._page(matching, before, limit + 1))
            return rows[:limit], rows[limit - 1].id if len(rows) > limit else None
        found: list[Job] = []
        for _ in range(ARGS_SCANNED // SCAN_CHUNK):
            rows = self._rows(connection, self._page(matching, before, SCAN_CHUNK))
            for job in rows:
                before = job.id
                if arguments_match(job, matching.args_match):
                    found.append(job)
                    if len(found) == limit:
                        return found, before
            if len(rows) < SCAN_CHUNK:
                return found, None
        return found, before

    def _rows(self, connection: Connection, page: Select[Any]) -> list[Job]:
        """The rows of a page of ids, newest first: the ids are found in an index alone, then
        only the page's rows are read, by primary key."""
        jobs = self.jobs
        ids = list(connection.execute(page).scalars())
        if not ids:
            return []
        rows = connection.execute(select(jobs).where(jobs.c.id.in_(ids)))
        return sorted((to_job(row._mapping) for row in rows), key=lambda job: -job.id)

    def _dressed(self, connection: Connection, found: list[Job]) -> list[Job]:
        """Jobs as a reader sees them: with their tags, pending in a paused queue as
        ``paused``."""
        tags = self.tags.of(connection, [job.id for job in found])
        waiting = any(job.state is JobState.PENDING for job in found)
        paused = set(connection.execute(paused_names(self.database)).scalars()) if waiting else ()
        return [
            replace(
                job,
                tags=tags.get(job.id, ()),
                state=seen_state(job.state, job.queue, paused),
            )
            for job in found
        ]

    def bulk_actions(self, limit: int) -> list[BulkAction]:
        table = self.database.schema.bulk_actions
        query = (
            select(table).where(self.database.mine(table)).order_by(desc(table.c.id)).limit(limit)
        )
        return [
            BulkAction(row.id, row.at, row.actor, row.action, _filter(row.filter), row.jobs)
            for row in self.database.fetch(query)
        ]


def _filter(stored: str) -> dict[str, Any]:
    try:
        found = json.loads(stored)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
