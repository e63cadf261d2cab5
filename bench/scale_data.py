"""The backlogs of ``bench.scale``: three cases of pending jobs, filled by the server.

Each case is one jobs table of rota's schema (made by a ``Rota``'s migrations, under its own
table prefix) holding ``size`` pending ``noop`` jobs written as ``queue_many`` writes them, by
``INSERT ... SELECT`` over ``seq_1_to_N`` (MariaDB) or ``generate_series`` (PostgreSQL):

- ``one_queue``: every job in the ``default`` queue at priority 0, due;
- ``queues_20x5``: 20 queues (``q0`` .. ``q19``) by 5 priorities (0 .. 4), due, served by one
  pool of the 20 queues;
- ``future_urgent``: one queue, half the jobs due at priority 0, the other half a day ahead at
  priority -1 (more urgent): what a claim must not walk past.

The n-th job is due n milliseconds ago (future ones: a day and n milliseconds ahead), so no two
share a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import func, select, text

from rota import JobContext, Rota
from rota.store.schema import notify_function
from rota.store.sql import SqlStore

PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
CHUNK = 500_000
DONE = ("succeeded", "failed", "running")
TASKS = ("noop", "sleep10")
"""The tasks of ``bench.apps``' worker, which the measured claim asks for as that worker does."""


@dataclass(frozen=True)
class Case:
    name: str
    queues: tuple[str, ...]
    queue: str
    """SQL over ``n``: the n-th job's queue, its priority, and whether it is due."""
    priority: str
    due: str

    def rows(self, backend: str, table: str, start: int, end: int) -> str:
        """The ``INSERT ... SELECT`` of jobs ``start`` .. ``end`` (MariaDB or PostgreSQL)."""
        if backend == "mariadb":
            source, n = f"seq_{start}_to_{end}", "seq"
            ago = f"CAST(:now AS DATETIME(6)) - INTERVAL {n} * 1000 MICROSECOND"
            ahead = f"CAST(:now AS DATETIME(6)) + INTERVAL 86400000000 + {n} * 1000 MICROSECOND"
        else:
            source, n = f"generate_series({start}, {end}) AS g(n)", "n"
            ago = f"CAST(:now AS TIMESTAMP) - {n} * interval '1 millisecond'"
            ahead = f"CAST(:now AS TIMESTAMP) + interval '1 day' + {n} * interval '1 millisecond'"
        due = self.due.format(n=n)
        columns = (
            "namespace, task, queue, priority, state, payload, attempt, max_attempts, run_at, "
            "created_at, cancel_requested, has_dependencies"
        )
        return (
            f"INSERT INTO {table} ({columns}) SELECT 'default', 'noop', "
            f"{self.queue.format(n=n)}, {self.priority.format(n=n)}, 'pending', :payload, 0, 1, "
            f"CASE WHEN {due} THEN {ago} ELSE {ahead} END, CAST(:now AS {_stamp(backend)}), "
            f"FALSE, FALSE FROM {source}"
        )


def _stamp(backend: str) -> str:
    return "DATETIME(6)" if backend == "mariadb" else "TIMESTAMP"


CASES = (
    Case("one_queue", ("default",), "'default'", "0", "TRUE"),
    Case(
        "queues_20x5",
        tuple(f"q{i}" for i in range(20)),
        "CONCAT('q', {n} % 20)",
        "({n} % 100 - {n} % 20) / 20",
        "TRUE",
    ),
    Case(
        "future_urgent",
        ("default",),
        "'default'",
        "CASE WHEN {n} % 2 = 0 THEN 0 ELSE -1 END",
        "{n} % 2 = 0",
    ),
)
BY_NAME = {case.name: case for case in CASES}


def prefix(case: Case, size: int, stem: str = "sc") -> str:
    return f"{stem}_{case.name[:6]}_{size}_"


def app(url: str, table_prefix: str) -> Rota:
    """A ``Rota`` on the case's tables with ``bench.apps``' tasks (made when first used)."""
    rota = Rota(url, table_prefix=table_prefix)

    @rota.task(name="noop", retries=0)
    async def noop(ctx: JobContext) -> None: ...

    @rota.task(name="sleep10", retries=0)
    async def sleep10(ctx: JobContext) -> None: ...

    return rota


def sql(rota: Rota) -> SqlStore:
    assert isinstance(rota.store, SqlStore)
    return rota.store


def pending(rota: Rota) -> int:
    jobs = sql(rota).schema.jobs
    with sql(rota).engine.connect() as connection:
        query = select(func.count()).where(jobs.c.state == "pending")
        return int(connection.execute(query).scalar_one())


def fill(rota: Rota, backend: str, case: Case, size: int) -> None:
    """Make the tables and fill them with ``size`` pending jobs of ``case`` unless they hold
    them already (then the jobs run or claimed by an earlier run are put back), then ANALYZE
    (and VACUUM on PostgreSQL, as autovacuum would)."""
    sql(rota).migrate()
    store = sql(rota)
    jobs = store.schema.jobs
    put_back(rota)  # what an interrupted run left claimed
    with store.engine.connect() as connection:
        have = int(connection.execute(select(func.count()).select_from(jobs)).scalar_one())
    if have == size:
        return  # kept from an earlier run, its statistics with it
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.engine.begin() as connection:
        connection.execute(jobs.delete())
        for start in range(1, size + 1, CHUNK):
            end = min(size, start + CHUNK - 1)
            statement = text(case.rows(backend, jobs.name, start, end))
            connection.execute(statement, {"now": now, "payload": PAYLOAD})
    analyze = "VACUUM ANALYZE {}" if backend == "postgres" else "ANALYZE TABLE {}"
    with store.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.execute(text(analyze.format(jobs.name)))


def put_back(rota: Rota, ids: Sequence[int] | None = None) -> int:
    """The jobs claimed or run (or only those of ``ids``) pending again, as written (read by
    the claim index's range of their state, or by id, not by a scan)."""
    store = sql(rota)
    jobs = store.schema.jobs
    which = jobs.c.state.in_(DONE) if ids is None else jobs.c.id.in_(ids)
    with store.engine.begin() as connection:
        changed = connection.execute(
            jobs.update()
            .where(store.database.mine(jobs), which)
            .values(
                state="pending",
                attempt=0,
                started_at=None,
                finished_at=None,
                lease_owner=None,
                lease_until=None,
                result=None,
                errors=None,
            )
        )
        return int(changed.rowcount)


def drop(rota: Rota, table_prefix: str) -> None:
    """The tables of ``table_prefix`` and, on PostgreSQL, its trigger's function."""
    store = sql(rota)
    with store.engine.begin() as connection:
        store.schema.metadata.drop_all(connection)
        connection.execute(text(f"DROP TABLE IF EXISTS {table_prefix}alembic_version"))
        if connection.dialect.name == "postgresql":
            connection.execute(text(f"DROP FUNCTION IF EXISTS {notify_function(table_prefix)}()"))
