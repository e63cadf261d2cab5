"""``rota worker --processes N``: N supervised worker processes; a killed one is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from rota import Rota
from tests.conftest import Database
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parent.parent


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
            return {worker.pid for worker in control.store.workers(since)}

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
            wait_until(lambda pid=pid: not Path(f"/proc/{pid}").exists(), timeout=10)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        control.store.engine.dispose()
