"""An idle worker's one look at the database per poll: is a job due for it, has a lease
expired or a wait timed out, when is the next tick?  Index-served subqueries in one ``SELECT``,
so that a worker with nothing to do sends one statement a poll instead of one per loop (the
claim's paused queues and candidates, the rescue's expired leases and timed-out waits, the
scheduler's due schedules and next tick); each loop runs its own statements only when the look
says there is work for it.

The look is a plain read (nothing locked): the claim and the rescue that follow decide.  Its
``jobs_due`` applies the claim's own filters (queue open, task known, due, dependencies
satisfied), so a job waiting for a dependency does not make every poll claim; a job over a
flow limit does (the claim is what counts the limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import false, or_, select

from rota.store.database import Database
from rota.store.jobs import SqlJobs
from rota.store.rows import aware, lease_expired
from rota.store.schedules import SqlSchedules
from rota.store.values import Outlook


class SqlOutlook:
    def __init__(self, database: Database, jobs: SqlJobs, schedules: SqlSchedules) -> None:
        self.database = database
        self.jobs = jobs
        self.schedules = schedules

    def look(self, queues: Sequence[str], tasks: Sequence[str], now: datetime) -> Outlook:
        jobs = self.database.schema.jobs
        if queues and tasks:
            self.jobs.candidates.task_sets.key(tasks)
        due = select(jobs.c.id).where(*self.jobs.candidates.due(list(queues), list(tasks), now))
        # The claim's dependency predicate, split in two: under its OR, PostgreSQL hashes the
        # dependencies of every unfinished job at each look.
        free = due.where(jobs.c.has_dependencies == false()).exists()
        unblocked = due.where(jobs.c.has_dependencies, self.jobs.dependencies.unblocked()).exists()
        expired = select(jobs.c.id).where(lease_expired(jobs, now), self.database.mine(jobs))
        deadlines = self.database.schema.wait_deadlines
        timed_out = select(deadlines.c.job_id).where(*self.jobs.workflow.passed(now))
        query = select(
            (or_(free, unblocked) if queues and tasks else false()).label("jobs_due"),
            or_(expired.exists(), timed_out.exists()).label("leases_expired"),
            self.schedules.next_due_query().scalar_subquery().label("next_tick"),
        )
        ((jobs_due, leases_expired, next_tick),) = self.database.fetch(query)
        return Outlook(bool(jobs_due), bool(leases_expired), aware(next_tick), now)
