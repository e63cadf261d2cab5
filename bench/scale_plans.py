"""What a claim reads, and the bounds ``bench.scale --quick`` holds it to at 100,000 pending.

A claim is the statements ``store.jobs.claim`` sends: its levels (the priorities each queue
holds due jobs at), then one locking read per level until it has its jobs. Each is run here as
the claim runs it, in one transaction rolled back afterwards, and measured in pages by the
server: PostgreSQL's ``EXPLAIN (ANALYZE, BUFFERS)`` (shared buffers hit or read), MariaDB's
``ANALYZE FORMAT=JSON`` (InnoDB pages accessed). Pages, not rows: the index entries a scan
steps over inside the index (a condition on ``run_at`` after ``priority``, which MariaDB pushes
into InnoDB) count in no row figure, not even MariaDB's ``Handler_read_*``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
    """Pages: PostgreSQL's shared buffers, MariaDB's InnoDB pages accessed."""
    taken: int
    """Jobs the claim took."""


def _sql(rota: Rota, query: Select[Any]) -> str:
    engine = sql(rota).engine
    return str(query.compile(engine, compile_kwargs={"literal_binds": True}))


def rows_and_pages(connection: Connection, statement: str, postgres: bool) -> tuple[int, int]:
    """Rows ``statement`` returns, and the pages it read: PostgreSQL's shared buffers hit or
    read, MariaDB's InnoDB pages accessed. Pages, not rows: the index entries a scan steps over
    inside the index (a condition on ``run_at`` after ``priority``) count in no row figure."""
    if postgres:
        found = connection.execute(text(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"))
        raw = found.scalar_one()
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        pages = int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"])
        return int(plan["Actual Rows"]), pages
    rows = len(connection.execute(text(statement)).all())
    plan = json.loads(connection.execute(text(f"ANALYZE FORMAT=JSON {statement}")).scalar_one())
    return rows, _pages_accessed(plan)


def _pages_accessed(node: object) -> int:
    """The pages InnoDB accessed, summed over every table of a MariaDB ``ANALYZE``."""
    if isinstance(node, list):
        return sum(_pages_accessed(item) for item in node)
    if not isinstance(node, dict):
        return 0
    own = node.get("r_engine_stats", {}).get("pages_accessed", 0)
    return int(own) + sum(_pages_accessed(value) for value in node.values())


def claim_reads(
    rota: Rota,
    queues: Sequence[str],
    tasks: Sequence[str] = TASKS,
    limit: int = LIMIT,
    now: datetime | None = None,
) -> Reads:
    """The statements of a claim of ``limit`` of ``tasks`` on ``queues``, run as the claim
    runs them (its levels, then the locking reads of each level until it is full), measured,
    and rolled back."""
    store = sql(rota)
    candidates = store.jobs.candidates
    candidates.task_sets.key(tasks)  # as a claim writes its set before its transaction
    postgres = store.engine.dialect.name == "postgresql"
    now = now or datetime.now(timezone.utc)
    with store.engine.connect() as connection:
        connection.begin()
        rows, read = rows_and_pages(
            connection, _sql(rota, candidates.levels_query(queues, now)), postgres
        )
        statements = 1

        def measured(query: Select[Any], parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
            nonlocal statements, read
            statement = _sql(rota, query.params(parameters))
            read += rows_and_pages(connection, statement, postgres)[1]
            statements += 1
            return [dict(row._mapping) for row in connection.execute(text(statement))]

        levels = candidates.levels(connection, queues, now)
        taken = len(candidates.take(connection, levels, tasks, limit, now, (), measured))
        connection.rollback()
    return Reads(statements, rows + taken, read, taken)


def bound(case: Case) -> int:
    """The most pages a claim of ``LIMIT`` may read on ``case``, whatever the backlog.

    A few seeks per (queue, priority) for the levels; per queue of the first level its index
    descent and the leaf pages of its best keys (``ClaimCandidates.nearest``: the keys alone,
    from the claim index); and per job taken its row, found by id and locked, with a probe of
    its task's set. Reading each queue's best rows, as a claim did before, read about 350
    pages a queue at 100,000 pending on PostgreSQL; walking past the jobs scheduled ahead, as
    a claim did before its levels, hundreds more.
    """
    queues, pairs = len(case.queues), len(case.queues) * 5
    return 10 * pairs + 10 * queues + 12 * LIMIT


def check(small: Rota, large: Rota, backend: str, case: Case) -> None:
    """Fail the run if a claim on ``case``'s ``large`` backlog reads more than ``bound``, which
    does not grow with the backlog. The pages at the ``small`` one are printed beside: they
    may be fewer by more than the backlog explains, where PostgreSQL finds the candidates by
    one merge join over the small table's primary key instead of a lookup each."""
    reads, base = claim_reads(large, case.queues), claim_reads(small, case.queues)
    limit = bound(case)
    verdict = "ok" if reads.read <= limit else "OVER"
    print(
        f"{backend} {case.name}: a claim sends {reads.statements} statements and reads "
        f"{reads.read:,} pages ({base.read:,} at the smaller backlog; bound {limit:,}) {verdict}",
        flush=True,
    )
    if reads.read > limit:
        raise SystemExit(f"{backend} {case.name}: the claim reads {reads.read:,} pages")
