"""What rota sends to MySQL 8.0.19, 8.0.36 and 8.4, without a MySQL server.

Two parts, both built on ``tests.store.mysql8`` (statements recorded where they run on
MariaDB, then compiled again by SQLAlchemy's MySQL dialect set to each version):

* every store test (``conftest.mysql8_statements``, autouse) checks every statement it sent,
  the migrations' DDL included: no ``RETURNING``, no ``LOCK IN SHARE MODE``, no ``VALUES()``
  in an upsert, no ``IF [NOT] EXISTS`` where only MariaDB takes it, and from 8.0.20 each
  upsert with its row alias. Checked where the statements run, each test for its own, since
  the store tests are spread over several processes;
* here, a store goes through every operation that writes an upsert (a unique key, a
  dependency, a flow-limit row, a lease, a queue, a schedule's tick), and the statements whose
  SQL differs between the versions must be those of ``golden/mysql-<version>.sql``: what a
  DBA reviews, and what a change of SQLAlchemy or rota must not change unnoticed. Statements
  that read the same on every version are left out of the golden files.

After a deliberate change, rewrite the golden files with
``ROTA_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/store/test_mysql8_statements.py``
and review their diff.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import timedelta
from pathlib import Path

from rota.core.limits import FlowLimits, Rate
from rota.core.model import DEFAULT_QUEUE
from rota.core.schedules import ScheduleSource, ScheduleSpec
from rota.store import SqlStore, open_store
from tests.conftest import START, Database
from tests.store.contract.support import LEASE, new
from tests.store.mysql8 import VERSIONS, recording

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = "ROTA_REGENERATE_GOLDEN"
MINUTE = timedelta(minutes=1)


def every_upsert(store: SqlStore) -> None:
    """Each operation of the store that writes ``INSERT ... ON DUPLICATE KEY UPDATE``."""
    (parent,) = store.jobs.enqueue([new()], START)
    store.jobs.enqueue([new(unique_key="order:1")], START)
    store.jobs.enqueue([dataclasses.replace(new(), depends_on=(parent,))], START)
    store.jobs.enqueue([dataclasses.replace(new("flow"), concurrency_key="c", rate_key="r")], START)
    limits = {"flow": FlowLimits("flow", concurrency=1, rate=Rate(5, 1))}
    assert store.jobs.claim("w1", [DEFAULT_QUEUE], ["flow"], 1, START, START + LEASE, limits)
    assert store.cluster.acquire_lease("prune", "w1", START, START + LEASE)
    assert store.cluster.set_queues_paused(["reports"], True, START) == ["reports"]
    spec = ScheduleSpec("nightly", "t", "* * * * *", "UTC", "{}", "default", 0, ScheduleSource.CODE)
    schedule, _ = store.schedules.upsert(spec, START, START, "code")
    assert schedule is not None
    tick = [new(schedule="nightly", scheduled_at=START)]
    assert store.schedules.fire(schedule, START + MINUTE, tick, START)


def test_the_statements_that_differ_between_mysql_versions_are_the_golden_ones(
    mariadb: Database,
) -> None:
    store = open_store(mariadb.url, mariadb.prefix)
    try:
        store.migrate()
        with recording() as recorded:
            every_upsert(store)
    finally:
        store.dispose()
    differing = [each for each in recorded.rendered() if len(set(each.values())) > 1]
    assert differing, "the upserts differ: the row alias from 8.0.20"
    for version in VERSIONS:
        statements = sorted({each[version].replace(mariadb.prefix, "rota_") for each in differing})
        text = ";\n\n".join(statements) + ";\n"
        path = GOLDEN / f"mysql-{version}.sql"
        if os.environ.get(REGENERATE):
            path.write_text(text)
        assert path.read_text() == text, f"{path.name} differs: see this module's docstring"
