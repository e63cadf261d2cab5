"""Deadlocks (1213) and lock-wait timeouts (1205) on MariaDB are repeated, not surfaced.

The errors are real server errors through the real driver: a trigger on the jobs table raises
them with ``SIGNAL`` while a counter in a ``MEMORY`` table (which a rollback does not undo) is
above zero, so a test decides exactly how many times the claim, the completion or the tick
insert fails before it may succeed. Each test runs through PyMySQL and through mysqlclient,
whose exceptions carry the error number alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from rota import JobContext, JobState, Rota, TransientStoreError
from rota.core.transitions import Transition, lease_until
from rota.store.database import CONFLICT_ATTEMPTS
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import eventually, sql_store

DEADLOCK = 1213
LOCK_WAIT = 1205


class Faults:
    """Arms the trigger: the next ``count`` statements of ``op`` fail with ``errno``."""

    def __init__(self, engine: Engine, prefix: str) -> None:
        self.engine = engine
        self.table = f"{prefix}faults"
        jobs = f"{prefix}jobs"
        with engine.begin() as connection:
            connection.execute(
                text(
                    f"CREATE TABLE {self.table} (op VARCHAR(16) PRIMARY KEY, "
                    "remaining INT NOT NULL, errno INT NOT NULL, raised INT NOT NULL) "
                    "ENGINE=MEMORY"
                )
            )
            connection.execute(
                text(
                    f"INSERT INTO {self.table} VALUES "
                    "('claim', 0, 0, 0), ('complete', 0, 0, 0), ('tick', 0, 0, 0)"
                )
            )
            connection.execute(text(self._trigger(jobs, "UPDATE", self._update_op())))
            connection.execute(text(self._trigger(jobs, "INSERT", self._insert_op())))

    @staticmethod
    def _update_op() -> str:
        return (
            "CASE WHEN OLD.state = 'pending' AND NEW.state = 'running' THEN 'claim' "
            "WHEN OLD.state = 'running' AND NEW.state = 'succeeded' THEN 'complete' END"
        )

    @staticmethod
    def _insert_op() -> str:
        return "CASE WHEN NEW.schedule IS NOT NULL THEN 'tick' END"

    def _trigger(self, jobs: str, event: str, op: str) -> str:
        table = self.table
        return f"""
            CREATE TRIGGER {jobs}_{event.lower()}_faults BEFORE {event} ON {jobs} FOR EACH ROW
            BEGIN
              DECLARE fault_op VARCHAR(16) DEFAULT {op};
              DECLARE fault_errno INT DEFAULT 0;
              SELECT errno INTO fault_errno FROM {table}
                WHERE op = fault_op AND remaining > 0;
              IF fault_errno <> 0 THEN
                UPDATE {table} SET remaining = remaining - 1, raised = raised + 1
                  WHERE op = fault_op;
                IF fault_errno = {DEADLOCK} THEN
                  SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = {DEADLOCK},
                    MESSAGE_TEXT = 'Deadlock found when trying to get lock (forced)';
                ELSE
                  SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = {LOCK_WAIT},
                    MESSAGE_TEXT = 'Lock wait timeout exceeded (forced)';
                END IF;
              END IF;
            END"""

    def arm(self, op: str, count: int, errno: int) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                text(
                    f"UPDATE {self.table} SET remaining = :count, errno = :errno, raised = 0 "
                    "WHERE op = :op"
                ),
                {"op": op, "count": count, "errno": errno},
            )

    def raised(self, op: str) -> int:
        with self.engine.connect() as connection:
            query = text(f"SELECT raised FROM {self.table} WHERE op = :op")
            return int(connection.execute(query, {"op": op}).scalar_one())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def app(mariadb_drivers: Database, clock: FakeClock) -> Iterator[Rota]:
    db = mariadb_drivers
    # The trigger's MEMORY table is locked a whole statement at a time: two of rota's own
    # statements can wait on each other across it and InnoDB's row locks, a cycle no deadlock
    # detector sees. A short lock wait ends it as a lock-wait timeout, repeated as any is.
    joiner = "&" if "?" in db.url else "?"
    url = f"{db.url}{joiner}init_command=SET+innodb_lock_wait_timeout%3D2"
    rota = Rota(url, table_prefix=db.prefix, clock=clock, poll_interval=0.05)

    @rota.task(retries=0)
    def noop(ctx: JobContext) -> None:
        """Nothing to do: the store's calls around it are what is under test."""

    @rota.task(cron="* * * * *")
    def every_minute(ctx: JobContext) -> None:
        """A schedule whose tick insert can be made to fail."""

    rota._readiness.ensure_ready()
    yield rota
    sql_store(rota).engine.dispose()


@pytest.fixture
def faults(app: Rota, mariadb: Database) -> Iterator[Faults]:
    engine = mariadb.engine()
    yield Faults(engine, mariadb.prefix)
    engine.dispose()


@pytest.mark.parametrize("errno", [DEADLOCK, LOCK_WAIT])
def test_claim_and_complete_repeat_through_conflicts(
    app: Rota, faults: Faults, clock: FakeClock, errno: int
) -> None:
    ids = [app.queue("noop") for _ in range(5)]
    store, now = app.store, clock.now()
    faults.arm("claim", 2, errno)

    claimed = store.jobs.claim("w1", ["default"], ["noop"], 10, now, lease_until(now, 30))

    assert faults.raised("claim") == 2
    assert sorted(job.id for job in claimed) == ids
    faults.arm("complete", 3, errno)
    done = [
        Transition(job.id, JobState.RUNNING, JobState.SUCCEEDED, job.attempt, now)
        for job in claimed
    ]

    assert len(store.jobs.complete("w1", done, now)) == len(ids)
    assert faults.raised("complete") == 3
    assert {store.reads.job(job_id).state for job_id in ids} == {JobState.SUCCEEDED}  # type: ignore[union-attr]


def test_tick_insert_repeats_through_a_deadlock(
    app: Rota, faults: Faults, clock: FakeClock
) -> None:
    app.drain()
    faults.arm("tick", 2, DEADLOCK)
    clock.advance(60)

    result = app.drain()

    assert faults.raised("tick") == 2
    assert result.succeeded == 1
    ticks = app.store.reads.jobs(task="every_minute")
    assert [(job.scheduled_at, job.state) for job in ticks] == [
        (START.replace(minute=minute), JobState.SUCCEEDED) for minute in (1, 0)
    ]


def test_a_conflict_that_persists_surfaces_after_a_bounded_number_of_attempts(
    app: Rota, faults: Faults, clock: FakeClock
) -> None:
    job_id = app.queue("noop")
    now = clock.now()
    faults.arm("claim", 1000, DEADLOCK)

    with pytest.raises(TransientStoreError, match="Deadlock") as raised:
        app.store.jobs.claim("w1", ["default"], ["noop"], 10, now, lease_until(now, 30))

    assert raised.value.rolled_back
    assert faults.raised("claim") == CONFLICT_ATTEMPTS
    assert app.store.reads.job(job_id).state is JobState.PENDING  # type: ignore[union-attr]


def test_a_running_worker_never_reports_a_database_error(
    app: Rota, faults: Faults, caplog: pytest.LogCaptureFixture
) -> None:
    ids = [app.queue("noop") for _ in range(40)]
    faults.arm("claim", 3, DEADLOCK)
    faults.arm("complete", 3, LOCK_WAIT)

    async def run_until_done() -> None:
        async with app:
            await eventually(
                lambda: app.counts().by_task.get("noop", {}).get("succeeded") == len(ids), 20
            )

    with caplog.at_level(logging.INFO, logger="rota"):
        asyncio.run(run_until_done())

    assert faults.raised("claim") == 3
    assert faults.raised("complete") == 3
    assert not [r for r in caplog.records if getattr(r, "event", "") == "worker.db_error"]
    assert {app.store.reads.job(job_id).attempt for job_id in ids} == {1}  # type: ignore[union-attr]
