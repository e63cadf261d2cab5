"""A job's workflow rows (``WorkflowStore``): the steps it saved, read at once for a run to
replay and each written as it finishes, and its mailbox of signals.

Every write a run makes is fenced by the job row: it first marks the job ``has_workflow`` (and
clears ``waiting_for``: the wait it woke from is over) where the job is still ``running`` at
the attempt and under the lease owner that ran the step. That update locks the row, so a rescue
or a cancel waits for the step's commit or comes first and leaves the step unsaved; a worker
that lost its lease writes nothing.

A signal and a park meet on the job row too. ``signal`` locks the job, then adds the message
and wakes the job if it waits for that signal; ``park`` (the completer's write of a
``wait_for``) locks the job, then looks for an untaken message of that signal: finding one, it
leaves the job pending instead of waiting. Whichever locks the row second sees what the first
committed (its statements start after the lock is granted), so a signal is never left unheard
beside a waiting job. ``has_workflow`` also tells the prune which jobs have rows here to delete
with them (``forget``).

A wait with a timeout also writes its deadline to ``wait_deadlines``, keyed by namespace and
moment: whether one has passed is one seek there (the idle look asks it every poll), where the
jobs table would have to read every waiting job's entry. A deadline that outlives its wait (a
signal or a cancel came first) is dropped when its moment comes, waking nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, insert, select, update
from sqlalchemy.engine import Connection

from rota.core.checks import LATEST
from rota.core.model import LIVE_STATES, JobState
from rota.core.transitions import Transition
from rota.core.workflow import Step
from rota.errors import StoreError
from rota.store.database import Database
from rota.store.rows import finished_values
from rota.store.values import Taken

LIVE = [state.value for state in LIVE_STATES]
"""The states of a job a signal can still reach."""


class SqlWorkflow:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.steps = database.schema.steps
        self.signals = database.schema.signals
        self.deadlines = database.schema.wait_deadlines

    def saved(self, job_id: int) -> list[Step]:
        steps = self.steps
        mine = select(self.jobs.c.id).where(self.jobs.c.id == job_id, self.database.mine(self.jobs))
        query = (
            select(steps.c.name, steps.c.result, steps.c.finished_at)
            .where(steps.c.job_id == job_id, steps.c.job_id.in_(mine))
            .order_by(steps.c.id)
        )
        return [
            Step(name, _decoded(job_id, name, result), finished_at)
            for name, result, finished_at in self.database.fetch(query)
        ]

    def save(
        self,
        job_id: int,
        owner: str,
        attempt: int,
        name: str,
        result: str | None,
        now: datetime,
    ) -> bool:
        def work(connection: Connection) -> bool:
            if not self._fence(connection, job_id, owner, attempt):
                return False
            self._step(connection, job_id, name, result, now)
            return True

        # Not repeated after a lost connection: the step may have been saved.
        return self.database.transaction(work, idempotent=False)

    def take(
        self,
        job_id: int,
        owner: str,
        attempt: int,
        signal: str,
        name: str,
        now: datetime,
        timed_out: bool = False,
    ) -> Taken | None:
        signals = self.signals
        oldest = (
            select(signals.c.id, signals.c.payload)
            .where(*self._untaken(job_id, signal))
            .order_by(signals.c.id)
            .limit(1)
            .with_for_update()
        )

        def work(connection: Connection) -> Taken | None:
            if not self._fence(connection, job_id, owner, attempt):
                return None
            found = connection.execute(oldest).first()
            if found is None and timed_out:
                self._step(connection, job_id, name, None, now)
                return Taken(True)
            if found is None:
                return Taken(False)
            message, payload = found
            taken = update(signals).where(signals.c.id == message).values(taken_by=name)
            connection.execute(taken)
            self._step(connection, job_id, name, payload, now)
            return Taken(True, payload)

        return self.database.transaction(work, idempotent=False)

    def signal(
        self,
        job_ids: Sequence[int],
        unique_key: tuple[Sequence[str], str] | None,
        signal: str,
        payload: str | None,
        now: datetime,
    ) -> bool:
        jobs = self.jobs
        which: ColumnElement[bool] = jobs.c.id.in_(job_ids)
        if unique_key is not None:
            tasks, key = unique_key
            which = and_(jobs.c.task.in_(tasks), jobs.c.unique_key == key)
        live = (
            select(jobs.c.id, jobs.c.state, jobs.c.waiting_for)
            .where(which, self.database.mine(jobs), jobs.c.state.in_(LIVE))
            .order_by(jobs.c.id)
            .with_for_update()
        )

        def work(connection: Connection) -> bool:
            found = connection.execute(live).all()
            for job_id, state, waiting_for in found:
                message = {"job_id": job_id, "name": signal, "payload": payload, "sent_at": now}
                connection.execute(insert(self.signals).values(message))
                woken = state == JobState.WAITING.value and waiting_for == signal
                changes: dict[str, object] = {"has_workflow": True}
                if woken:
                    changes.update(state=JobState.PENDING.value, run_at=now)
                connection.execute(update(jobs).where(jobs.c.id == job_id).values(changes))
            return bool(found)

        return self.database.transaction(work, idempotent=False)

    def wake_timed_out(self, now: datetime, limit: int) -> int:
        jobs, deadlines = self.jobs, self.deadlines
        over = (
            select(deadlines.c.job_id)
            .where(*self.passed(now))
            .order_by(deadlines.c.until)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )

        def work(connection: Connection) -> int:
            ids = list(connection.execute(over).scalars())
            if not ids:
                return 0
            # A deadline outlives its wait (a signal came first, a cancel): the job's own
            # state and run_at decide, and the row goes either way.
            waiting = (jobs.c.state == JobState.WAITING.value, jobs.c.run_at <= now)
            woken = update(jobs).where(jobs.c.id.in_(ids), *waiting)
            count = int(connection.execute(woken.values(state=JobState.PENDING.value)).rowcount)
            gone = delete(deadlines).where(*self.passed(now), deadlines.c.job_id.in_(ids))
            connection.execute(gone)
            return count

        return self.database.transaction(work)

    def passed(self, now: datetime) -> tuple[ColumnElement[bool], ...]:
        """The deadlines of this namespace's waits that have passed by ``now``: a range of the
        table's primary key (the idle look's, and the rescue's)."""
        deadlines = self.deadlines
        return (deadlines.c.namespace == self.database.namespace, deadlines.c.until <= now)

    def park(
        self, connection: Connection, transition: Transition, guard: ColumnElement[bool]
    ) -> JobState | None:
        """Write a ``wait_for``'s transition: ``waiting`` until ``run_at`` unless a signal it
        waits for is in the mailbox already, then ``pending`` at once; ``cancelled`` if a
        cancel was asked while the attempt ran (no heartbeat would ever stop a waiting job).
        The state written; ``None`` when the transition did not apply."""
        jobs, signal = self.jobs, transition.waiting_for
        held = (jobs.c.id == transition.job_id, guard, jobs.c.attempt == transition.held)
        locked = select(jobs.c.cancel_requested).where(*held).with_for_update()
        found = connection.execute(locked).first()
        if found is None:
            return None
        this = update(jobs).where(jobs.c.id == transition.job_id)
        released = {"lease_owner": None, "lease_until": None, "cancel_requested": False}
        if found[0]:
            ended = {"state": JobState.CANCELLED.value, "finished_at": transition.at}
            written = {**ended, "attempt": transition.attempt, **released, **finished_values(jobs)}
            connection.execute(this.values(written))
            return JobState.CANCELLED
        assert signal is not None
        mailbox = select(self.signals.c.id).where(*self._untaken(transition.job_id, signal))
        sent = connection.execute(mailbox.limit(1).with_for_update()).first() is not None
        state = JobState.PENDING if sent else JobState.WAITING
        values = {
            "state": state.value,
            "attempt": transition.attempt,
            "run_at": transition.at if sent else transition.run_at,
            "waiting_for": signal,
            **released,
        }
        connection.execute(this.values(values))
        until = transition.run_at
        if state is JobState.WAITING and until is not None and until < LATEST:
            deadline = {"namespace": self.database.namespace, "until": until}
            deadlines = self.database.dialect.insert_ignoring_duplicates(self.deadlines)
            connection.execute(deadlines, [{**deadline, "job_id": transition.job_id}])
        return state

    def forget(self, connection: Connection, job_ids: Sequence[int]) -> None:
        """Delete the steps and signals of ``job_ids``, jobs deleted in the same transaction."""
        if job_ids:
            for table in (self.steps, self.signals):
                connection.execute(delete(table).where(table.c.job_id.in_(job_ids)))

    def _fence(self, connection: Connection, job_id: int, owner: str, attempt: int) -> bool:
        jobs = self.jobs
        held = (
            update(jobs)
            .where(
                jobs.c.id == job_id,
                self.database.mine(jobs),
                jobs.c.state == JobState.RUNNING.value,
                jobs.c.lease_owner == owner,
                jobs.c.attempt == attempt,
            )
            .values(has_workflow=True, waiting_for=None)
        )
        return bool(connection.execute(held).rowcount == 1)

    def _step(
        self, connection: Connection, job_id: int, name: str, result: str | None, now: datetime
    ) -> None:
        row = {"job_id": job_id, "name": name, "result": result, "finished_at": now}
        connection.execute(insert(self.steps).values(row))

    def _untaken(self, job_id: int, signal: str) -> tuple[ColumnElement[bool], ...]:
        signals = self.signals
        return (signals.c.job_id == job_id, signals.c.name == signal, signals.c.taken_by.is_(None))


def _decoded(job_id: int, name: str, stored: str | None) -> object:
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError as error:
        raise StoreError(f"job {job_id}'s saved step {name!r} cannot be read: {error}") from None
