"""The bare SQL a queue must run, on a plain DB-API connection, measured beside rota's own.

Each figure is the least a durable queue can do on this server and driver (PyMySQL, psycopg 3)
into a table of rota's schema: one ``INSERT`` + ``COMMIT`` per job, a 1,000-row ``INSERT``, and
the claim/complete loop of ``DESIGN.md``'s performance budget. Rota and bare SQL alternate in
rounds within one scenario, so that the other load on a shared machine weighs on both alike and
the ratio holds even when the absolute figures drift.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy.engine import make_url

from bench.common import Config, Result
from bench.rota_bench import fresh
from rota import Enqueue

COLUMNS = (
    "task, queue, priority, state, payload, attempt, max_attempts, run_at, created_at, "
    "cancel_requested, has_dependencies"
)
PAYLOAD = json.dumps({"v": 1, "args": [], "kwargs": {}}, separators=(",", ":"))
ROUNDS = 5
BATCH = 1_000
CLAIM_BATCH = 100


@contextmanager
def connect(config: Config, backend: str) -> Iterator[Any]:
    """A DB-API connection to ``backend``'s server, as a user's own code would open it; ``None``
    for SQLite, which has no server to measure rota against (rota is measured alone there)."""
    if backend == "sqlite":
        yield None
        return
    url = make_url(config.url(backend))
    if backend == "mariadb":
        import pymysql

        connection: Any = pymysql.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password or "",
            database=url.database,
            charset="utf8mb4",
        )
    else:
        import psycopg

        connection = psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.username, dbname=url.database
        )
    try:
        yield connection
    finally:
        connection.close()


def _row(now: datetime) -> tuple[Any, ...]:
    return ("noop", "default", 0, "pending", PAYLOAD, 0, None, now, now, False, False)


VALUES = "(" + ", ".join(["%s"] * len(COLUMNS.split(","))) + ")"


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def insert_one(connection: Any, table: str, backend: str) -> None:
    """One job, its id read back as a queue must (``RETURNING`` or ``lastrowid``), committed."""
    returning = " RETURNING id" if backend == "postgres" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({COLUMNS}) VALUES {VALUES}{returning}", _row(_now()))
        if returning:
            cursor.fetchone()
        else:
            assert cursor.lastrowid
    connection.commit()


def insert_many(connection: Any, table: str, backend: str, count: int = BATCH) -> None:
    """``count`` jobs in one multi-row ``INSERT``, ids returned on PostgreSQL, committed."""
    now = _now()
    returning = " RETURNING id" if backend == "postgres" else ""
    values = ", ".join([VALUES] * count)
    parameters = [value for _ in range(count) for value in _row(now)]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({COLUMNS}) VALUES {values}{returning}", parameters)
        if returning:
            cursor.fetchall()
    connection.commit()


def claim_loop(connection: Any, table: str, total: int) -> None:
    """DESIGN.md's budget: lock a batch with SKIP LOCKED, mark it running, commit, mark it
    succeeded, commit; until ``total`` jobs are done."""
    done = 0
    while done < total:
        now = _now()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, task, payload, attempt FROM {table} WHERE state = 'pending' "
                "AND queue = 'default' AND run_at <= %s ORDER BY priority, run_at, id "
                f"LIMIT {CLAIM_BATCH} FOR UPDATE SKIP LOCKED",
                (now,),
            )
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                raise RuntimeError(f"only {done} of {total} bare jobs were pending")
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(
                f"UPDATE {table} SET state = 'running', started_at = %s, lease_owner = 'bare', "
                f"lease_until = %s, attempt = attempt + 1 WHERE id IN ({marks})",
                (now, now + timedelta(seconds=60), *ids),
            )
            connection.commit()
            cursor.execute(
                f"UPDATE {table} SET state = 'succeeded', finished_at = %s, lease_owner = NULL, "
                f"lease_until = NULL WHERE id IN ({marks})",
                (_now(), *ids),
            )
            connection.commit()
        done += len(ids)


def _timed(work: Callable[[], object], times: int) -> float:
    start = time.perf_counter()
    for _ in range(times):
        work()
    return time.perf_counter() - start


def enqueue(config: Config, backend: str) -> list[Result]:
    """rota's ``queue()`` and ``queue_many()`` against bare SQL, in alternating rounds; each
    into a table of its own, so both insert into tables of the same size."""
    single = 300 if config.quick else 2_000
    per_round = max(1, single // ROUNDS)
    batches = max(1, config.jobs // BATCH // ROUNDS)
    took = {"rota_single": 0.0, "bare_single": 0.0, "rota_batch": 0.0, "bare_batch": 0.0}
    with fresh(config, backend) as (rota, _, _), fresh(config, backend) as (bare, _, _):
        table = bare.store.schema.jobs.name
        with connect(config, backend) as connection:
            rota.queue("noop")  # the pool's first connection, not measured
            for _ in range(ROUNDS):
                took["rota_single"] += _timed(lambda: rota.queue("noop"), per_round)
                took["rota_batch"] += _timed(
                    lambda: rota.queue_many([Enqueue("noop") for _ in range(BATCH)]), batches
                )
                if connection is not None:
                    took["bare_single"] += _timed(
                        lambda: insert_one(connection, table, backend), per_round
                    )
                    took["bare_batch"] += _timed(
                        lambda: insert_many(connection, table, backend), batches
                    )
    singles, rows = per_round * ROUNDS, batches * ROUNDS * BATCH
    batch = {"batch": BATCH, "rounds": ROUNDS}
    systems = ("rota", "bare") if took["bare_single"] else ("rota",)
    return [
        result
        for system in systems
        for result in (
            Result(
                "enqueue",
                system,
                backend,
                "single",
                singles / took[f"{system}_single"],
                "jobs/s",
                {"rounds": ROUNDS},
            ),
            Result(
                "enqueue", system, backend, "batch", rows / took[f"{system}_batch"], "jobs/s", batch
            ),
        )
    ]


def claim(config: Config, backend: str) -> list[Result]:
    """The bare claim/complete loop at batch 100 over ``config.jobs`` jobs, one connection."""
    with fresh(config, backend) as (bare, _, _):
        table = bare.store.schema.jobs.name
        with connect(config, backend) as connection:
            for _ in range(config.jobs // BATCH):
                insert_many(connection, table, backend)
            took = _timed(lambda: claim_loop(connection, table, config.jobs), 1)
    params = {"processes": 1, "batch": CLAIM_BATCH, "jobs": config.jobs}
    return [Result("throughput", "bare", backend, "noop", config.jobs / took, "jobs/s", params)]
