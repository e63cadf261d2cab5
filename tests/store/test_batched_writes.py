"""How ``SqlStore`` writes, beyond the protocol's contract: a batch of outcomes is one
statement, whatever results its jobs carry."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from rota.core.model import JobState
from rota.core.transitions import Transition
from rota.store import open_store
from tests.conftest import START, Database
from tests.store.contract.support import claim, new


def test_successes_with_results_are_one_update_each_with_its_own_result(db: Database) -> None:
    store = open_store(db.url, db.prefix)
    store.migrate()
    ids = store.enqueue([new() for _ in range(30)], START)
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
        assert store.complete("w1", done, START) == 30
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(updates) == 1, updates
    stored = [store.job(job_id) for job_id in ids]
    assert [job.result if job else None for job in stored] == [{"n": i} for i in range(30)]
    store.dispose()
