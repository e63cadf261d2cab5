"""The rows this rota cannot read, as ``rota check`` lists them.

Every worker and schedule row is read (both tables stay small), and every job that has not
finished: its ids through the claim index, whose first column is the state, then the columns
that may be unreadable, by id a page at a time, so that the cost grows with the backlog and not
with the history (about 6 s for 100,000 pending jobs on a 2-core machine, mostly the reading).
A finished job's row changes no more and is shown as it is; its state, were it one rota does
not know, is not a finished one, so such a job is among those read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import select

from rota.core.model import FINAL_STATES
from rota.store.database import Database
from rota.store.rows import JOB_CHECKED, job_problems, outside, to_schedule
from rota.store.values import UnreadableRow
from rota.store.worker_rows import to_worker

PAGE = 500
"""Jobs read per query: ids per ``IN`` list, well under every backend's parameter limit."""


class SqlUnreadable:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.schema = database.schema

    def rows(self, limit: int) -> list[UnreadableRow]:
        """Up to ``limit`` unreadable rows of the namespace: workers', schedules', then jobs' by
        id."""
        found: list[UnreadableRow] = []
        for row in self._all():
            if len(found) == limit:
                break
            found.append(row)
        return found

    def _all(self) -> Iterator[UnreadableRow]:
        workers, schedules = self.schema.workers, self.schema.schedules
        mine = self.database.mine
        rows = self.database.fetch(select(workers).where(mine(workers)).order_by(workers.c.id))
        yield from _unreadable(to_worker(row._mapping) for row in rows)
        rows = self.database.fetch(
            select(schedules).where(mine(schedules)).order_by(schedules.c.name)
        )
        yield from _unreadable(to_schedule(row._mapping) for row in rows)
        yield from self._jobs()

    def _jobs(self) -> Iterator[UnreadableRow]:
        jobs = self.schema.jobs
        unfinished = outside(jobs.c.state, [state.value for state in FINAL_STATES])
        ids = sorted(
            job_id
            for (job_id,) in self.database.fetch(
                select(jobs.c.id).where(self.database.mine(jobs), unfinished)
            )
        )
        checked = select(*(jobs.c[name] for name in JOB_CHECKED))
        for start in range(0, len(ids), PAGE):
            page = checked.where(jobs.c.id.in_(ids[start : start + PAGE]))
            for row in self.database.fetch(page.order_by(jobs.c.id)):
                problem = job_problems(row._mapping)
                if problem is not None:
                    yield UnreadableRow("job", str(row.id), problem)


def _unreadable(read: Iterable[object]) -> Iterator[UnreadableRow]:
    return (row for row in read if isinstance(row, UnreadableRow))
