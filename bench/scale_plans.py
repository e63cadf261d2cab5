"""What a claim reads, and the bounds ``bench.scale --quick`` holds it to at 100,000 pending.

A claim is the statements ``store.jobs.claim`` sends: its levels (the priorities each queue
holds due jobs at), then one locking read per level until it has its jobs. Each is run here as
the claim runs it, in one transaction rolled back afterwards, and measured by the server:
PostgreSQL's ``EXPLAIN (ANALYZE, BUFFERS)`` (pages: shared buffers hit or read, which also
counts the index entries a scan steps over inside the index, as no row count does), MariaDB's
``Handler_read_*`` counters of the session (index entries and rows read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Select, text
from sqlalchemy.engine import Connection

from bench.scale_data import TASKS, Case, sql
from rota import Rota

LIMIT = 50


@dataclass(frozen=True)
class Reads:
    statements: int
    rows: int
    """Rows the claim's statements returned: the levels, then the jobs taken."""
    read: int
    """MariaDB: index entries and rows read; PostgreSQL: pages (shared buffers)."""


def _sql(rota: Rota, query: Select[Any]) -> str:
    engine = sql(rota).engine
    return str(query.compile(engine, compile_kwargs={"literal_binds": True}))


def _run(connection: Connection, statement: str, postgres: bool) -> tuple[int, int]:
    """Rows ``statement`` returns and what it read."""
    if postgres:
        found = connection.execute(text(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"))
        raw = found.scalar_one()
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        pages = int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"])
        return int(plan["Actual Rows"]), pages
    status = text("SHOW SESSION STATUS LIKE 'Handler_read%'")
    before = {name: int(value) for name, value in connection.execute(status)}
    rows = len(connection.execute(text(statement)).all())
    after = {name: int(value) for name, value in connection.execute(status)}
    # rnd_next: the rows of the derived table of candidates, not of the jobs table.
    read = sum(after[name] - before[name] for name in after if name != "Handler_read_rnd_next")
    return rows, read


def claim_reads(rota: Rota, case: Case) -> Reads:
    """The statements of a claim of ``LIMIT`` on ``case``'s queues, run and rolled back."""
    store = sql(rota)
    candidates = store.jobs.candidates
    postgres = store.engine.dialect.name == "postgresql"
    now = datetime.now(timezone.utc)
    with store.engine.connect() as connection:
        connection.begin()
        rows, read = _run(
            connection, _sql(rota, candidates.levels_query(case.queues, now)), postgres
        )
        levels = candidates.levels(connection, case.queues, now)
        statements, taken = 1, 0
        for level in levels:
            query = candidates.query(level.queues, TASKS, LIMIT - taken, now, (), level.priority)
            got, cost = _run(connection, _sql(rota, query), postgres)
            statements, taken, read = statements + 1, taken + got, read + cost
            if taken >= LIMIT:
                break
        connection.rollback()
    return Reads(statements, rows + taken, read)


def bound(case: Case, postgres: bool) -> int:
    """The most a claim of ``LIMIT`` may read on ``case``, whatever the backlog.

    Per queue of the first level: its best ``LIMIT`` rows and the probes of their dependency
    check and pause (MariaDB), or the pages of its index descent and of those rows (PostgreSQL:
    the fill interleaves the queues, so ``LIMIT`` rows of one queue lie on up to ``LIMIT``
    pages), then each of them found again by id (3 pages) before the best ``LIMIT`` are
    locked (twice more their pages); and a few seeks per (queue, priority) for the levels.
    """
    queues, pairs = len(case.queues), len(case.queues) * 5
    if postgres:
        return queues * (5 * LIMIT + 10) + 3 * LIMIT + 8 * pairs
    return queues * (LIMIT + 3) + 3 * LIMIT + 4 * pairs


def check(rota: Rota, backend: str, case: Case) -> None:
    """Fail the run if a claim on ``case`` reads more than ``bound``."""
    reads = claim_reads(rota, case)
    limit = bound(case, backend == "postgres")
    unit = "pages" if backend == "postgres" else "rows"
    verdict = "ok" if reads.read <= limit else "OVER"
    print(
        f"{backend} {case.name}: a claim sends {reads.statements} statements and reads "
        f"{reads.read:,} {unit} (bound {limit:,}) {verdict}",
        flush=True,
    )
    if reads.read > limit:
        raise SystemExit(f"{backend} {case.name}: the claim reads {reads.read:,} {unit}")
