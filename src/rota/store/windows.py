"""Finished jobs over a window of time (the dashboard's day and its hourly chart, the metrics,
``counts(finished_since=)``), read from the hour tallies and the finished-jobs index beside them.

The fold (``store.finished``) takes finished jobs in one whole UTC hour at a time, so besides
the all-time tallies it keeps ``hour_tallies``: the jobs of each hour before the mark, per
state, queue and task.  A window's whole hours before the mark are read there, a few rows an
hour; only what lies after the mark (the hour or so the fold lags behind), and a window's
part-hour at its start, are read from the index.  A day at 5,000,000 jobs in 29 days was
173,000 index entries, grouped twice per overview; it is now some 24 rows per group and the
index entries of two hours or so.

Each read is one statement that joins the mark (one snapshot on every backend), so a fold that
moves the mark meanwhile never makes a job count twice or not at all: an hour's tallies hold
exactly its jobs before the mark, and the index is read from the mark on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, literal, select, union_all

from rota.core.model import JobState
from rota.store.database import Database, every_row

HOUR = timedelta(hours=1)
MARK = 1
"""The id of the mark table's one row."""
FINISHED = [state.value for state in JobState if state.is_final]


def hour_of(moment: datetime) -> datetime:
    """The start of the UTC hour ``moment`` lies in (``moment`` is aware UTC, as rows read)."""
    return moment.replace(minute=0, second=0, microsecond=0)


def whole_hour(moment: datetime) -> bool:
    return hour_of(moment) == moment


class FinishedWindows:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.hours = database.schema.hour_tallies
        self.mark = database.schema.tally_mark

    def since(self, since: datetime) -> list[Select[Any]]:
        """Branches of a UNION ALL giving ``(state, queue, task, n)`` rows whose sums are the
        jobs that finished at or after ``since``: the index up to the first whole hour (only
        what is before the mark), the hour tallies from there to the mark, the index from the
        mark on."""
        jobs, hours, mark = self.jobs, self.hours, self.mark
        first = since if whole_hour(since) else hour_of(since) + HOUR
        grouped = (jobs.c.state, jobs.c.queue, jobs.c.task)
        summed = (hours.c.state, hours.c.queue, hours.c.task)
        head = self._index((*grouped, func.count()), jobs.c.finished_at < mark.c.folded_until)
        tail = self._index((*grouped, func.count()), jobs.c.finished_at >= mark.c.folded_until)
        return [
            head.where(jobs.c.finished_at >= since, jobs.c.finished_at < first).group_by(*grouped),
            self._hours((*summed, func.sum(hours.c.jobs)), first).group_by(*summed),
            tail.where(jobs.c.finished_at >= since).group_by(*grouped),
        ]

    def per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        """``Store.finished_per_period``: per period, a GROUP BY state, its whole hours before
        the mark from the hour tallies and the rest from the index (a period whose bounds are
        not whole hours from the index alone); the periods are branches of one UNION ALL."""
        counts = {state: [0] * (len(bounds) - 1) for state in FINISHED}
        jobs, hours, mark = self.jobs, self.hours, self.mark
        branches: list[Select[Any]] = []
        for number, (start, end) in enumerate(pairwise(bounds)):
            finished = (literal(number), jobs.c.state, func.count())
            period = (
                jobs.c.finished_at >= start,
                jobs.c.finished_at < end,
                jobs.c.state.in_(FINISHED),
            )
            if not (whole_hour(start) and whole_hour(end)):
                branches.append(self._index(finished).where(*period).group_by(jobs.c.state))
                continue
            tail = self._index(finished, jobs.c.finished_at >= mark.c.folded_until)
            folded = (literal(number), hours.c.state, func.sum(hours.c.jobs))
            branches += [
                tail.where(*period).group_by(jobs.c.state),
                self._hours(folded, start, end)
                .where(hours.c.state.in_(FINISHED))
                .group_by(hours.c.state),
            ]
        if branches:
            for number, name, n in self.database.fetch(every_row(union_all(*branches))):
                counts[name][number] = int(n)
        return counts

    def _index(
        self, columns: Sequence[Any], against_mark: ColumnElement[bool] | None = None
    ) -> Select[Any]:
        """``columns`` of the namespace's finished jobs, read from the index, on one side of the
        mark (``None``: either)."""
        jobs = self.jobs
        query = select(*columns).where(self.database.mine(jobs))
        if against_mark is None:
            return query
        return query.select_from(jobs.join(self.mark, and_(self.mark.c.id == MARK, against_mark)))

    def _hours(
        self, columns: Sequence[Any], start: datetime, end: datetime | None = None
    ) -> Select[Any]:
        """``columns`` of the namespace's hour tallies of the hours from ``start`` (to ``end``)
        before the mark."""
        hours, mark = self.hours, self.mark
        before = and_(mark.c.id == MARK, hours.c.hour < mark.c.folded_until)
        within = [hours.c.hour >= start, *([] if end is None else [hours.c.hour < end])]
        query = select(*columns).select_from(hours.join(mark, before))
        return query.where(self.database.mine(hours), hours.c.jobs > 0, *within)
