"""What a fleet of idle workers costs one MariaDB/MySQL server: connections and statements.

``--processes`` ``rota worker`` processes (default 100, poll 0.5 s, nothing due) are started
against one server under a user of their own, ``rota_fleet``, so that the server's per-user
statistics (``information_schema.USER_STATISTICS``, switched on with ``userstat``) count
their statements alone. Once every process has run for longer than a pool takes to retire
what start-up opened, the connections they hold are counted and their statements over
``--seconds``. The floor beside it is the bare SQL a polling queue must send: one statement a
poll per process. Targets (issue 32): connections within ``max_connections`` with room, and
under 250 statements/s in total.

    python -m bench.idle_fleet --processes 100
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from bench.common import MYSQL_URL
from bench.rota_bench import workers

USER = "rota_fleet"
APP = "bench.idle_fleet_app:app"
COUNTERS = ("SELECT_COMMANDS", "UPDATE_COMMANDS", "OTHER_COMMANDS")
POLL = 0.5
STATEMENT_TARGET = 250.0


def fleet_url(admin_url: str) -> str:
    url = create_engine(admin_url).url
    return url.set(drivername="mysql+pymysql", username=USER, password=None).render_as_string()


def counters(connection: Any) -> dict[str, int]:
    query = text(
        f"SELECT {', '.join(COUNTERS)} FROM information_schema.USER_STATISTICS WHERE USER = :u"
    )
    row = connection.execute(query, {"u": USER}).one_or_none()
    return dict.fromkeys(COUNTERS, 0) if row is None else dict(zip(COUNTERS, row, strict=True))


def held(connection: Any) -> int:
    query = text("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = :u")
    return int(connection.execute(query, {"u": USER}).scalar_one())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default=MYSQL_URL, help="an account that may create users")
    parser.add_argument("--processes", type=int, default=100)
    parser.add_argument("--settle", type=float, default=60.0, help="seconds after the first start")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()
    admin = create_engine(create_engine(options.url).url.set(drivername="mysql+pymysql"))
    prefix = f"bench_fleet_{os.getpid()}_"
    with admin.begin() as connection:
        connection.execute(text(f"CREATE USER IF NOT EXISTS '{USER}'@'%'"))
        database = connection.execute(text("SELECT DATABASE()")).scalar_one()
        connection.execute(text(f"GRANT ALL ON `{database}`.* TO '{USER}'@'%'"))
        userstat = connection.execute(text("SELECT @@GLOBAL.userstat")).scalar_one()
        connection.execute(text("SET GLOBAL userstat = 1"))
        limit = int(connection.execute(text("SELECT @@GLOBAL.max_connections")).scalar_one())
    url = fleet_url(options.url)
    os.environ.update(BENCH_URL=url, BENCH_PREFIX=prefix)
    from bench.idle_fleet_app import app

    app.store.migrate()
    app.store.engine.dispose()
    log = Path("/tmp/idle_fleet.log")
    log.unlink(missing_ok=True)
    try:
        with (
            workers(url, prefix, options.processes, 1, POLL, APP, log) as running,
            admin.connect() as connection,
        ):
            started = time.monotonic()
            peak = 0
            settled_at = started + options.settle
            while time.monotonic() < settled_at or peak == 0:
                peak = max(peak, held(connection))
                connection.commit()
                time.sleep(1)
            alive = sum(worker.poll() is None for worker in running)
            print(
                f"{alive} of {options.processes} workers running "
                f"{time.monotonic() - started:.0f} s after the first start; peak "
                f"{peak} connections during start-up",
                flush=True,
            )
            before, at = counters(connection), time.monotonic()
            connection.commit()
            time.sleep(options.seconds)
            after, elapsed = counters(connection), time.monotonic() - at
            connections = held(connection)
            connection.commit()
        codes = [worker.returncode for worker in running]
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"SET GLOBAL userstat = {int(userstat)}"))
        app.store.engine.dispose()
    statements = {name: (after[name] - before[name]) / elapsed for name in COUNTERS}
    total = sum(statements.values())
    floor = options.processes / POLL
    figures = {
        "processes": options.processes,
        "running": alive,
        "max_connections": limit,
        "connections": connections,
        "connections_per_process": connections / options.processes,
        "peak_connections_at_start": peak,
        "statements_per_s": round(total, 1),
        "statements_per_s_by_kind": {k: round(v, 1) for k, v in statements.items()},
        "statements_per_process_per_poll": round(total / options.processes * POLL, 3),
        "bare_floor_per_s": floor,
        "exit_codes": sorted(set(codes)),
    }
    print(
        f"connections held: {connections} of max_connections {limit} "
        f"({connections / options.processes:.2f} a process; room {limit - connections})"
    )
    print(
        f"statements: {total:.1f}/s in total ({total / options.processes * POLL:.2f} a poll "
        f"a process); the bare floor, one statement a poll: {floor:.0f}/s; by kind "
        f"{figures['statements_per_s_by_kind']}"
    )
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    met = alive == options.processes and connections < limit and total < STATEMENT_TARGET
    print("targets met" if met else "TARGETS MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
