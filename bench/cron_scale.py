"""Cron at scale: thousands of code schedules, half ``* * * * *`` and half ``*/5``.

Measures the start-up sync of the code's schedules (on empty tables, then again as a restart
does), then runs N ``rota worker`` processes over minute ticks up to and including one of the
five-minute ticks, and reports per tick: jobs enqueued and ticks skipped (the default overlap
policy skips a tick while the schedule's previous run is unfinished) against the schedules
due, how long after the tick every one of them was decided and committed (counted every
``POLL`` seconds), and duplicates (the tick's unique key makes them impossible; counted to
show it).

    python -m bench.cron_scale --url mysql://root@127.0.0.1/test --schedules 10000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, func, select

from rota.store.migrate import drop

ROOT = Path(__file__).resolve().parent.parent
POLL = 0.25
"""Seconds between two counts of a tick's jobs (the lag's resolution)."""


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def tick_window(ready: datetime, minimum: int) -> list[datetime]:
    """The minute ticks after ``ready``: at least ``minimum``, through a five-minute one."""
    first = ready.replace(second=0, microsecond=0) + timedelta(minutes=1)
    ticks = [first]
    while len(ticks) < minimum or all(tick.minute % 5 for tick in ticks):
        ticks.append(ticks[-1] + timedelta(minutes=1))
    return ticks


def enqueued(connection: Connection, jobs: Table, tick: datetime) -> int:
    query = select(func.count()).where(jobs.c.scheduled_at == tick, jobs.c.tick.is_(True))
    return int(connection.execute(query).scalar_one())


def skipped(connection: Connection, history: Table, tick: datetime) -> int:
    """Ticks skipped by the ``skip`` overlap policy (the schedule's previous run unfinished),
    as the history records them: decided, not dropped."""
    entry = history.c.new.like(f'%"tick": "{tick.isoformat()}"%')
    query = select(func.count()).where(history.c.action == "skipped", entry)
    return int(connection.execute(query).scalar_one())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default="mysql://root@127.0.0.1:3306/test")
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ticks", type=int, default=2, help="at least this many minute ticks")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    prefix = f"bench_cs_{os.getpid()}_"
    env = {
        **os.environ,
        "BENCH_URL": options.url,
        "BENCH_PREFIX": prefix,
        "BENCH_SCHEDULES": str(options.schedules),
    }
    os.environ.update(env)
    from bench.cron_scale_app import app

    app.store.migrate()
    sync = app._schedules.sync_code
    first_sync, second_sync = timed(sync), timed(sync)
    print(
        f"sync of {options.schedules} code schedules: first {first_sync:.2f} s, "
        f"restart {second_sync:.2f} s"
    )
    command = [sys.executable, "-m", "rota", "worker", "bench.cron_scale_app:app"]
    command += ["--log-level", "warning"]
    log = (options.json or Path("/tmp/cron_scale.json")).with_suffix(".log").open("w")
    print(f"the workers' logs: {log.name}")
    workers = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
        for _ in range(options.workers)
    ]
    ticks = tick_window(datetime.now(timezone.utc) + timedelta(seconds=5), options.ticks)
    print(f"{options.workers} workers; ticks {ticks[0]:%H:%M}..{ticks[-1]:%H:%M}", flush=True)
    jobs, history = app.store.database.schema.jobs, app.store.database.schema.schedule_history
    due = {
        tick: options.schedules if tick.minute % 5 == 0 else (options.schedules + 1) // 2
        for tick in ticks
    }
    complete: dict[datetime, float] = {}
    try:
        with app.store.engine.connect() as connection:
            while datetime.now(timezone.utc) < ticks[-1] + timedelta(seconds=60):
                now = datetime.now(timezone.utc)
                for tick in ticks:
                    if tick <= now and tick not in complete:
                        decided = enqueued(connection, jobs, tick) + skipped(
                            connection, history, tick
                        )
                        connection.commit()
                        if decided >= due[tick]:
                            complete[tick] = (now - tick).total_seconds()
                if len(complete) == len(ticks):
                    break
                time.sleep(POLL)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=120) for worker in workers]
    per_tick = []
    with app.store.engine.connect() as connection:
        for tick in ticks:
            count, distinct = connection.execute(
                select(func.count(), func.count(jobs.c.schedule.distinct())).where(
                    jobs.c.scheduled_at == tick, jobs.c.tick.is_(True)
                )
            ).one()
            per_tick.append(
                {
                    "tick": tick.isoformat(),
                    "due": due[tick],
                    "enqueued": count,
                    "skipped": skipped(connection, history, tick),
                    "duplicates": count - distinct,
                    "all_decided_within_s": complete.get(tick),
                }
            )
    drop(app.store.database)
    result = {
        "schedules": options.schedules,
        "workers": options.workers,
        "sync_first_s": round(first_sync, 3),
        "sync_restart_s": round(second_sync, 3),
        "ticks": per_tick,
        "exit_codes": codes,
    }
    print(json.dumps(result, indent=2))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2))
    whole = all(t["enqueued"] + t["skipped"] == t["due"] and not t["duplicates"] for t in per_tick)
    prompt = all((t["all_decided_within_s"] or 99) <= 10 for t in per_tick)
    return 0 if whole and prompt and max(first_sync, second_sync) <= 5 else 1


if __name__ == "__main__":
    sys.exit(main())
