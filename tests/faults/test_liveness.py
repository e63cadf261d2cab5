"""Worker liveness seen from outside, with real ``rota worker`` processes.

* SIGKILL a worker (lease 2 s, so a heartbeat every 2/3 s): ``rota check`` lists it among the
  dead workers within two heartbeat intervals of its last heartbeat, not two minutes later.
* A worker whose claim loop ends stops heartbeating and ``rota worker`` exits non-zero
  (``WORKER_DIED``), so that a supervisor starts a new one instead of it idling for ever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rota import Rota
from tests.conftest import Database
from tests.workers import LEASE, ROOT, ROTA_COMMAND, Workers

pytestmark = pytest.mark.slow

HEARTBEAT = LEASE / 3
EXIT_TIMEOUT = 20.0


def check(db: Database) -> dict[str, Any]:
    options = ["--url", db.url, "--table-prefix", db.prefix, "--json"]
    done = subprocess.run(
        [sys.executable, *ROTA_COMMAND, "check", *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def by_pid(rows: list[dict[str, Any]], pid: int) -> dict[str, Any] | None:
    return next((row for row in rows if row["pid"] == pid), None)


def test_rota_check_shows_a_sigkilled_worker_dead_within_two_heartbeats(
    db: Database, control: Rota, tmp_path: Path
) -> None:
    workers = Workers(db, control, tmp_path)
    try:
        process = workers.start()
        live = by_pid(check(db)["workers"], process.pid)
        assert live is not None and live["heartbeat_seconds"] == pytest.approx(HEARTBEAT)
        process.send_signal(signal.SIGKILL)
        killed_at = datetime.now().astimezone()
        process.wait(timeout=10)
        shown_live: list[datetime] = []
        while True:
            report = check(db)
            dead = by_pid(report["dead_workers"], process.pid)
            if dead is not None:
                break
            assert by_pid(report["workers"], process.pid) is not None, "listed, live or dead"
            checked = datetime.fromisoformat(report["checked_at"])
            assert checked - killed_at < timedelta(seconds=30), "still live 30 s after SIGKILL"
            shown_live.append(checked)
        live_until = datetime.fromisoformat(dead["live_until"])
        assert live_until - killed_at <= timedelta(seconds=2 * HEARTBEAT), (
            "dead two heartbeat intervals after the last heartbeat before the kill"
        )
        assert all(checked <= live_until for checked in shown_live), (
            "no check after those two intervals showed it live"
        )
        seen_dead = datetime.fromisoformat(report["checked_at"])
        print(
            f"[{db.backend}] heartbeat {HEARTBEAT:.2f} s: live until "
            f"{(live_until - killed_at).total_seconds():.2f} s after SIGKILL; "
            f"rota check (a new process each time) listed it dead "
            f"{(seen_dead - killed_at).total_seconds():.2f} s after it"
        )
    finally:
        workers.stop_all()


def test_a_worker_whose_claim_loop_ends_stops_heartbeating_and_exits_non_zero(
    db: Database, control: Rota, tmp_path: Path
) -> None:
    workers = Workers(db, control, tmp_path, app="tests.apps.dying_app:app")
    try:
        process = workers.start()
        started = time.monotonic()
        code = process.wait(timeout=EXIT_TIMEOUT)
        log = workers.log(process)
        assert code == 1, log
        assert "worker.claim_loop_died" in log or "the claim loop ended" in log, log
        assert "ClaimLoopBroken" in log and "WORKER_DIED" in log, log
        assert time.monotonic() - started < EXIT_TIMEOUT
    finally:
        workers.stop_all()
