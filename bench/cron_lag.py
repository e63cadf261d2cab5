"""Cron precision: lag from each tick of a ``* * * * *`` schedule to its handler's start.

Starts N ``rota worker`` processes against one database, waits for the given number of minute
ticks, stops them with SIGTERM and prints p50/p99/max lag.  A tick that ran twice or not at all
is reported too (the primary key on the tick makes a second run fail loudly).

    python -m bench.cron_lag --url mysql://root@127.0.0.1/test --ticks 10 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select, text

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="mysql://root@127.0.0.1:3306/test")
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    prefix = f"bench_cron_{os.getpid()}_"
    env = {**os.environ, "BENCH_URL": options.url, "BENCH_PREFIX": prefix}
    os.environ.update(env)
    from bench.cron_app import app, starts

    engine = app.store.engine
    starts.create(engine)
    first = datetime.now(timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=1)
    last = first + timedelta(minutes=options.ticks - 1)
    command = [
        sys.executable,
        "-c",
        "from rota.cli import main; main()",
        "worker",
        "bench.cron_app:app",
        "--log-level",
        "warning",
    ]
    workers = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(options.workers)]
    backend = app.store.database.dialect.name
    print(f"{options.workers} workers on {backend}; ticks {first:%H:%M}..{last:%H:%M}")
    try:
        while datetime.now(timezone.utc) < last + timedelta(seconds=10):
            time.sleep(1)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=60) for worker in workers]
    with engine.connect() as connection:
        rows = connection.execute(select(starts.c.tick, starts.c.started, starts.c.pid)).all()
    expected = {(first + timedelta(minutes=n)).isoformat() for n in range(options.ticks)}
    ticks = {row.tick for row in rows}
    lags = [
        (datetime.fromisoformat(row.started) - datetime.fromisoformat(row.tick)).total_seconds()
        for row in rows
        if row.tick in expected
    ]
    result = {
        "workers": options.workers,
        "ticks": options.ticks,
        "runs": len(rows),
        "missing": sorted(expected - ticks),
        "p50_s": round(statistics.median(lags), 4) if lags else None,
        "p99_s": round(percentile(lags, 0.99), 4) if lags else None,
        "max_s": round(max(lags), 4) if lags else None,
        "processes": sorted({row.pid for row in rows}),
        "exit_codes": codes,
    }
    print(json.dumps(result, indent=2))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2))
    with engine.begin() as connection:
        for name in ("starts", "jobs", "workers", "schedules", "alembic_version"):
            connection.execute(text(f"DROP TABLE IF EXISTS {prefix}{name}"))
    ok = not result["missing"] and len(rows) == options.ticks and codes == [0] * len(codes)
    return 0 if ok and lags and percentile(lags, 0.99) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
