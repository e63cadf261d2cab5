"""``rota worker --processes N``: N supervised worker processes; a killed one is replaced, and
they all stop when the supervisor dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest

from rota import JobState, Rota
from tests.conftest import Database
from tests.helpers import sql_store, wait_until

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_supervised_workers_are_replaced_and_stop_together(
    server_db: Database, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "ROTA_TEST_URL": server_db.url,
        "ROTA_TEST_PREFIX": server_db.prefix,
        "ROTA_TEST_DIR": str(tmp_path),
    }
    control = Rota(server_db.url, table_prefix=server_db.prefix)
    control.jobs()  # creates the schema the workers report to
    supervisor = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rota",
            "worker",
            "tests.apps.process_app:app",
            "--processes",
            "2",
            "--grace",
            "2",
        ],
        cwd=ROOT,
        env=env,
    )
    try:

        def live_pids() -> set[int]:
            since = control.clock.now() - timedelta(seconds=10)
            return {worker.pid for worker in control.store.cluster.workers(since)}

        wait_until(lambda: len(live_pids()) == 2, timeout=30)
        first = live_pids()
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: len(live_pids() - {victim}) == 2, timeout=30)
        replaced = live_pids() - {victim}
        assert len(replaced & first) == 1, "the survivor kept running"
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=30) == 0
        for pid in replaced:
            wait_until(partial(_gone, pid), timeout=10)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        sql_store(control).engine.dispose()


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _exited(pid: int) -> bool:
    """Gone, or a zombie waiting for whichever process adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def test_a_killed_supervisor_takes_its_workers_with_it(server_db: Database, tmp_path: Path) -> None:
    """SIGKILL leaves the supervisor no chance to stop its children: they notice it is gone
    and stop on their own, as if sent SIGTERM, giving their running job back."""
    grace = 2.0
    env = {
        **os.environ,
        "ROTA_TEST_URL": server_db.url,
        "ROTA_TEST_PREFIX": server_db.prefix,
        "ROTA_TEST_DIR": str(tmp_path),
        "ROTA_TEST_LEASE": "30",
    }
    control = Rota(server_db.url, table_prefix=server_db.prefix)
    control.jobs()
    log_path = tmp_path / "supervisor.log"
    command = [sys.executable, "-m", "rota", "worker", "tests.apps.process_app:app"]
    with log_path.open("wb") as log:
        supervisor = subprocess.Popen(
            [*command, "--processes", "2", "--grace", str(grace)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    children: set[int] = set()
    try:

        def live_pids() -> set[int]:
            since = control.clock.now() - timedelta(seconds=60)
            return {worker.pid for worker in control.store.cluster.workers(since)}

        wait_until(lambda: len(live_pids()) == 2, timeout=30)
        children |= live_pids()
        job_id = control.queue("wait_for_cancel", 600)
        wait_until(lambda: control.job(job_id).state is JobState.RUNNING, timeout=10)

        killed = time.monotonic()
        supervisor.send_signal(signal.SIGKILL)
        assert supervisor.wait(timeout=5) == -signal.SIGKILL
        for pid in children:
            wait_until(partial(_exited, pid), timeout=grace + 5)
        gone_after = time.monotonic() - killed
        print(f"[{server_db.backend}] supervisor SIGKILL -> children gone in {gone_after:.3f} s")

        job = control.job(job_id)
        assert job.state is JobState.PENDING, job
        assert job.attempt == 0, job  # released by a graceful stop, not left to its lease
        assert live_pids() == set(), "a child did not unregister: it did not stop gracefully"
        assert log_path.read_text().count("the supervisor is gone") == 2
    finally:
        for pid in children:
            if not _exited(pid):
                os.kill(pid, signal.SIGKILL)
        if supervisor.poll() is None:
            supervisor.kill()
        sql_store(control).engine.dispose()
