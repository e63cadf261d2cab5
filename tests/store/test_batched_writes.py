"""How ``SqlStore`` writes, beyond the protocol's contract: a batch of outcomes is one
statement, whatever results its jobs carry, as long as the server takes it in one (results are
measured as sent: UTF-8 and escapes; MariaDB's own refusals are in
``tests/faults/test_report_sizes.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from rota.core.model import JobState
from rota.core.transitions import Transition
from rota.store import open_store
from rota.store.base import StatementTooLarge
from rota.store.sizes import by_size, sent_bytes
from tests.conftest import START, Database
from tests.store.contract.support import claim, new


def test_successes_with_results_are_one_update_each_with_its_own_result(db: Database) -> None:
    store = open_store(db.url, db.prefix)
    store.migrate()
    ids = store.jobs.enqueue([new() for _ in range(30)], START)
    assert sorted(claim(store, limit=30)) == sorted(ids)
    done = [
        Transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, 1, START, result=f'{{"n":{i}}}')
        for i, job_id in enumerate(ids)
    ]
    updates: list[str] = []

    def count(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        """A driver runs an ``executemany`` of an UPDATE as one statement per row."""
        if statement.lstrip().upper().startswith("UPDATE"):
            updates.extend([statement] * (len(parameters) if many else 1))

    engine = store.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        assert len(store.jobs.complete("w1", done, START)) == 30
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(updates) == 1, updates
    stored = [store.reads.job(job_id) for job_id in ids]
    assert [job.result if job else None for job in stored] == [{"n": i} for i in range(30)]
    store.dispose()


def test_results_are_measured_as_a_mysql_driver_sends_them() -> None:
    assert sent_bytes('"plain"') == 9, "each quote is escaped"
    assert sent_bytes('"\U0001f600é"') == 4 + 2 + 4, "UTF-8 bytes, not characters"
    assert sent_bytes('"a\\"b"') == 10, "a backslash and three quotes escaped"

    def success(job_id: int, characters: int) -> Transition:
        result = '"' + "\U0001f600" * characters + '"'
        return Transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, 1, START, result=result)

    limit = 1024 * 1024
    slack = limit // 16  # the SQL's room: 64 KiB
    share = (limit - slack) // 4  # a quarter of what results may take, in bytes as sent
    quarter = (share - 4 - 64) // 4  # its characters: quotes escaped, and the result's SQL
    groups = by_size([success(n, quarter) for n in range(9)], limit)
    assert [len(group) for group in groups] == [4, 4, 1]
    with pytest.raises(StatementTooLarge) as refused:
        by_size([success(1, 10), success(2, limit // 4), success(3, 10)], limit)
    assert refused.value.job_ids == (2,)
