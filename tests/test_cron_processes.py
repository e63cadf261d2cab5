"""Two real worker processes with a ``* * * * *`` schedule on MariaDB: the next minute's tick
runs once, within two seconds of its time (one real minute boundary; the fake-clock tests cover
many ticks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.apps.records import runs_table
from tests.conftest import Database
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.mark.timeout(150)
def test_two_workers_run_the_next_minute_once(mariadb: Database) -> None:
    env = {**os.environ, "ROTA_TEST_URL": mariadb.url, "ROTA_TEST_PREFIX": mariadb.prefix}
    engine = mariadb.engine()
    runs = runs_table(mariadb.prefix)
    runs.create(engine)

    def recorded() -> list[tuple[str, int, str]]:
        with engine.connect() as connection:
            query = select(runs.c.tick, runs.c.pid, runs.c.started)
            return [(row[0], row[1], row[2]) for row in connection.execute(query)]

    started = datetime.now(timezone.utc)
    first = started.replace(second=0, microsecond=0) + timedelta(minutes=1)
    if first - started < timedelta(seconds=10):  # too close for the workers to be up by then
        time.sleep((first - started).total_seconds() + 0.5)
        first += timedelta(minutes=1)
    boundaries = [first]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from rota.cli import main; main()",
                "worker",
                "tests.apps.cron_app:app",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        wait_until(
            lambda: (
                datetime.now(timezone.utc) > boundaries[-1] + timedelta(seconds=5)
                and len(recorded()) >= len(boundaries)
            ),
            timeout=90,
            every=0.5,
        )
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        outputs = [worker.communicate(timeout=30)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    rows = recorded()
    engine.dispose()
    ticks = Counter(tick for tick, _, _ in rows)
    assert ticks == Counter(b.isoformat() for b in boundaries), rows
    lags = [
        (datetime.fromisoformat(start) - datetime.fromisoformat(tick)).total_seconds()
        for tick, _, start in rows
    ]
    print(f"tick-to-start lag per run: {[round(lag, 3) for lag in lags]} s")
    assert all(0 <= lag < 2 for lag in lags)
