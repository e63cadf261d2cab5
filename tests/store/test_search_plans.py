"""Every filter of ``rota.find`` but the argument match is served by an index (DESIGN.md, "Tags,
search and bulk actions"): EXPLAINed, as the inspection queries are, on a table holding a
history of finished jobs, so that no filter reads the whole jobs table."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert, text

from rota.core.search import Filter
from rota.store.sql import SqlStore
from tests.conftest import START
from tests.helpers import jobs_statements
from tests.store.test_inspection_plans import store

__all__ = ["store"]

FILTERS: dict[str, Filter] = {
    "state": Filter(state="failed"),
    "task": Filter(task="rare"),
    "queue": Filter(queue="rare"),
    "tags": Filter(tags=["tenant:acme"]),
    "schedule": Filter(schedule="nightly"),
    "error code": Filter(error_code="TIMEOUT"),
    "created": Filter(created_after=START - timedelta(minutes=5)),
    "finished": Filter(finished_after=START - timedelta(minutes=5)),
    "state and tags": Filter(state="failed", tags=["tenant:acme"]),
}


@pytest.fixture(scope="module")
def searched(store: SqlStore) -> SqlStore:
    """A few rare jobs beside the history: failed, of a rare task and queue, tagged apart
    from the history's jobs, whose tags spread over 50 tenants."""
    jobs, tags = store.schema.jobs, store.schema.job_tags
    rare = {"task": "rare", "queue": "rare", "priority": 0, "attempt": 1}
    payload = {"payload": '{"v":1,"args":[],"kwargs":{}}', "run_at": START}
    row = {**rare, **payload, "created_at": START, "state": "failed", "finished_at": START}
    with store.engine.begin() as connection:
        connection.execute(insert(jobs), [{**row, "error_code": "TIMEOUT"}] * 10)
        ticked = {**row, "task": "t", "queue": "default", "state": "succeeded"}
        at = [START - timedelta(days=n) for n in range(5)]
        connection.execute(
            insert(jobs), [{**ticked, "schedule": "nightly", "scheduled_at": t} for t in at]
        )
        ids = connection.execute(text(f"SELECT id, task FROM {jobs.name}"))
        tagged = [
            {"job_id": job_id, "tag": "tenant:acme" if task == "rare" else f"tenant:{job_id % 50}"}
            for job_id, task in ids
        ]
        connection.execute(insert(tags), tagged)
        backend = store.engine.dialect.name
        analyze = "ANALYZE {}" if backend == "postgresql" else "ANALYZE TABLE {}"
        for table in (jobs, tags):
            connection.execute(text(analyze.format(table.name)))
    return store


def assert_sought(store: SqlStore, call: Any) -> None:
    """No statement reads every row of the jobs table, nor of the tags table where a tag is
    its filter (PostgreSQL: no sequential scan; MySQL: no plan of type ``ALL``).  The read of
    a page's tags by job id is left out: on a table this small PostgreSQL rightly scans it."""
    with store.engine.connect() as connection:
        read = (store.schema.jobs.name, store.schema.job_tags.name)
        for statement, parameters in jobs_statements(store, call, read):
            tables = [store.schema.jobs.name]
            if "tag = " in statement:
                tables += [store.schema.job_tags.name, "tag0", "tag1"]
            explained = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)
            if store.engine.dialect.name == "postgresql":
                plan = "\n".join(row[0] for row in explained)
                print(plan)
                assert not any(f"Seq Scan on {table}" in plan for table in tables), statement
            else:
                rows = [dict(row) for row in explained.mappings()]
                print(rows)
                for row in (row for row in rows if row["table"] in tables):
                    assert row["key"] is not None and row["type"] != "ALL", statement


@pytest.mark.parametrize("name", list(FILTERS))
def test_a_search_filter_is_served_by_an_index(searched: SqlStore, name: str) -> None:
    found, _ = searched.search.find(FILTERS[name], 100, None)
    assert found, "the filter matches jobs of the table"
    assert_sought(searched, lambda: searched.search.find(FILTERS[name], 100, None))
    assert_sought(searched, lambda: searched.search.count(FILTERS[name]))
