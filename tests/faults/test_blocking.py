"""User code that blocks never makes a job run twice at once (DESIGN invariant 3).

Two real worker processes with two-second leases share the database.  An async handler that
holds its worker's event loop for three leases, or a hook that sleeps as long, stops nothing
that keeps leases: they are renewed from a thread of their own (``runtime.leases``), and hooks
run off the event loop (``observe.hooks``).  The blocked loop is logged with its stack.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rota import JobState, Rota
from tests.conftest import Database
from tests.workers import LEASE, Workers

HOLD = 3 * LEASE
SERVERS = pytest.mark.parametrize("db", ["mariadb", "postgres"], indirect=True)


def ran_once(control: Rota, workers: Workers, job_id: int) -> None:
    workers.wait(lambda: control.job(job_id).state is JobState.SUCCEEDED, timeout=HOLD + 20)
    job = control.job(job_id)
    assert (job.attempt, job.errors) == (1, ())
    assert workers.mark(job_id, 2, "started") is None, "no second run, at once or after"


@pytest.mark.slow
@SERVERS
def test_an_async_handler_that_blocks_the_loop_keeps_its_lease(
    db: Database, control: Rota, tmp_path: Path
) -> None:
    workers = Workers(db, control, tmp_path, app="tests.apps.blocking_app:app")
    try:
        blocked = workers.start()
        job_id = control.queue("block_the_loop", HOLD)
        workers.wait(lambda: workers.mark(job_id, 1, "started"), blocked, timeout=20)
        other = workers.start()
        ran_once(control, workers, job_id)
        log = workers.log(blocked)
        assert "worker.loop_blocked" not in workers.log(other)
        assert "the worker's event loop has run nothing for" in log
        assert "block_the_loop" in log, "the stack shows what holds the loop"
        assert "job.recovered" not in workers.log(other)
    finally:
        workers.stop_all()


@pytest.mark.slow
@SERVERS
def test_a_hook_that_sleeps_keeps_the_worker_going(
    db: Database, control: Rota, tmp_path: Path
) -> None:
    slow = {"ROTA_TEST_SLOW_HOOK": str(HOLD)}
    workers = Workers(db, control, tmp_path, app="tests.apps.blocking_app:app", env=slow)
    try:
        hooked = workers.start()
        job_id = control.queue("quick")
        workers.wait(lambda: workers.mark(job_id, 1, "finished"), hooked, timeout=20)
        workers.start()
        ran_once(control, workers, job_id)
        more = [control.queue("quick") for _ in range(5)]
        workers.wait(
            lambda: all(control.job(n).state is JobState.SUCCEEDED for n in more), timeout=20
        )
    finally:
        workers.stop_all()
