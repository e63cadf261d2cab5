"""Pruning 1,000,000 old finished jobs while claims go on (issue 32, target 6).

The target: the prune gets through 1,000,000 jobs past their retention within 2 minutes, and
the claims that run meanwhile are slowed at most twice at p99.

Per backend, one jobs table of rota's schema (its migrations, its own table prefix) gets, by
``INSERT ... SELECT`` on the server (``bench.inspection``'s sequences): ``ROWS`` succeeded
``noop`` jobs that finished eight days ago and before, one every 50 ms (the default retention
keeps succeeded jobs seven days), folded into the tallies as a long-running deployment's
would be, and a backlog of ``PENDING`` due jobs (``bench.scale_data``'s ``one_queue``).
Then, in one run:

- the baseline: claims of 50 back to back (``bench.scale``'s ``claim_ms``: the real store's
  claim, each claim's jobs put back pending by id) for ``--seconds``;
- the prune: one ``rota worker`` process, serving a queue that holds no job, so that all it
  does is its housekeeping, whose prune starts at once; claims go on as before until no job
  past retention is left; the time is from the process's start (its start-up included);
- the claims again for ``--seconds`` after it, to tell a slowdown of the prune's own from one
  the deletions leave behind (InnoDB's purge, PostgreSQL's dead tuples).

It prints claim p50/p99 before, during and after, the time to prune, and the ratio of the p99
during the prune to the p99 before.  ``--quick``: 100,000 jobs.

    python -m bench.prune --quick
    python -m bench.prune --json bench/results/prune.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import exists, select, text

from bench import scale_data
from bench.common import Config, Result, percentile, summary
from bench.inspection import SEQUENCES
from bench.rota_bench import ROOT, worker_command
from bench.scale import claim_ms
from bench.scale_data import BY_NAME, PAYLOAD, app, sql
from rota import Rota
from rota.core.model import FOLD_LAG
from rota.runtime.retention import Retention

ROWS, QUICK_ROWS, PENDING, CHUNK = 1_000_000, 100_000, 20_000, 500_000
AGE = timedelta(days=8)
"""How long ago the newest old job finished: past the default retention of succeeded jobs."""
SPACING_MS = 50
TARGET_SECONDS, TARGET_RATIO = 120.0, 2.0
CASE = BY_NAME["one_queue"]
CLAIMS = 10
"""Claims between two looks at whether any job past retention is left."""


def fill(rota: Rota, backend: str, rows: int, now: datetime) -> None:
    """The tables with ``rows`` old succeeded jobs, folded, and the pending backlog, then
    ANALYZE (and VACUUM on PostgreSQL, as autovacuum would)."""
    store = sql(rota)
    store.migrate()
    jobs = store.schema.jobs.name
    source, n, ago = SEQUENCES[backend]
    at = ago.format(n=n, ms=SPACING_MS)
    columns = (
        "namespace, task, queue, priority, state, payload, attempt, max_attempts, run_at, "
        "created_at, started_at, finished_at, cancel_requested, has_dependencies"
    )
    old = {"now": now - AGE, "payload": PAYLOAD}
    with store.engine.begin() as connection:
        connection.execute(text(CASE.rows(backend, jobs, 1, PENDING)), {**old, "now": now})
        for start in range(1, rows + 1, CHUNK):
            end = min(rows, start + CHUNK - 1)
            insert = (
                f"INSERT INTO {jobs} ({columns}) SELECT 'default', 'noop', 'default', 0, "
                f"'succeeded', :payload, 1, 1, {at}, {at}, {at}, {at}, FALSE, FALSE "
                f"FROM {source.format(start=start, end=end)}"
            )
            connection.execute(text(insert), old)
    store.finished.fold(now - FOLD_LAG)
    analyze = "VACUUM ANALYZE {}" if backend == "postgres" else "ANALYZE TABLE {}"
    with store.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.execute(text(analyze.format(jobs)))


def claims_until(rota: Rota, done: Callable[[], bool]) -> list[float]:
    """Claims of 50, each put back, until ``done()`` (asked every ``CLAIMS`` claims); ms."""
    took: list[float] = []
    while not done():
        took += claim_ms(rota, CASE, CLAIMS, untimed=0)
    return took


def for_seconds(seconds: float) -> Callable[[], bool]:
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() >= deadline


def pruned(rota: Rota, now: datetime) -> Callable[[], bool]:
    """Whether no succeeded job past retention is left."""
    store = sql(rota)
    jobs = store.schema.jobs
    cutoff = now - Retention().succeeded
    old = (jobs.c.state == "succeeded") & (jobs.c.finished_at < cutoff)
    query = select(exists().where(store.database.mine(jobs), old))

    def done() -> bool:
        with store.engine.connect() as connection:
            return not connection.execute(query).scalar_one()

    return done


def prune(url: str, prefix: str) -> subprocess.Popen[bytes]:
    """A ``rota worker`` on the bench's tables that serves an empty queue: it only prunes."""
    env = {**os.environ, "BENCH_URL": url, "BENCH_PREFIX": prefix}
    return subprocess.Popen([*worker_command(), "--queues", "idle"], cwd=ROOT, env=env)


def stop(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()


def measure(config: Config, backend: str, seconds: float, keep: bool) -> list[Result]:
    rows = QUICK_ROWS if config.quick else ROWS
    url, prefix = config.url(backend), f"pr{uuid.uuid4().hex[:6]}_"
    rota = app(url, prefix)
    try:
        now = datetime.now(timezone.utc)
        start = time.perf_counter()
        fill(rota, backend, rows, now)
        print(f"{backend}: {rows:,} old jobs ({time.perf_counter() - start:.0f} s to fill)")
        before = claims_until(rota, for_seconds(seconds))
        load = os.getloadavg()[0]
        start = time.perf_counter()
        worker = prune(url, prefix)
        try:
            during = claims_until(rota, pruned(rota, now))
            took = time.perf_counter() - start
        finally:
            stop(worker)
        after = claims_until(rota, for_seconds(seconds))
        load = max(load, os.getloadavg()[0])
    finally:
        if not keep:
            scale_data.drop(rota, prefix)
        rota.store.dispose()
    ratio = percentile(during, 0.99) / percentile(before, 0.99)
    params = {"rows": rows, "pending": PENDING, "load": round(load, 2)}
    found = [
        Result("prune", "rota", backend, "prune_seconds", took, "s", params),
        Result("prune", "rota", backend, "claim_p99_ratio", ratio, "during / before", params),
    ]
    for phase, values in (("before", before), ("during", during), ("after", after)):
        figures = summary(values)
        for metric in ("p50", "p99"):
            found.append(
                Result(
                    "prune",
                    "rota",
                    backend,
                    f"claim_{metric}_{phase}",
                    figures[metric],
                    "ms/claim of 50",
                    {**params, "claims": len(values)},
                )
            )
    return found


def table(results: list[Result]) -> str:
    """A markdown table: per backend, the prune's time and the claims before, during, after."""
    lines = [
        "| backend | rows | prune s | claims p50 / p99 ms: before | during | after | p99 ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for backend in dict.fromkeys(r.backend for r in results):
        mine = {r.metric: r for r in results if r.backend == backend}
        took, ratio = mine["prune_seconds"], mine["claim_p99_ratio"]
        phases = [
            f"{mine[f'claim_p50_{phase}'].value:.1f} / {mine[f'claim_p99_{phase}'].value:.1f}"
            for phase in ("before", "during", "after")
        ]
        marks = [
            " (over)" if over else ""
            for over in (took.value > TARGET_SECONDS, ratio.value > TARGET_RATIO)
        ]
        lines.append(
            f"| {backend} | {took.params['rows']:,} | {took.value:.1f}{marks[0]} | "
            f"{' | '.join(phases)} | {ratio.value:.2f}{marks[1]} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} old jobs")
    parser.add_argument("--backends", default="mariadb,postgresql")
    parser.add_argument("--seconds", type=float, default=None, help="of claims before and after")
    parser.add_argument("--keep", action="store_true", help="keep the tables")
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    seconds = options.seconds or (10.0 if options.quick else 30.0)
    backends = tuple(
        "postgres" if name.strip() == "postgresql" else name.strip()
        for name in options.backends.split(",")
    )
    config = Config(backends=backends, quick=options.quick)
    found: list[Result] = []
    for backend in config.backends:
        found += measure(config, backend, seconds, options.keep)
    print(table(found))
    if options.json is not None:
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta = {"when": when, "quick": options.quick, "load": os.getloadavg()}
        data = {"meta": meta, "results": [result.to_json() for result in found]}
        options.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
