"""Search and bulk actions at a million jobs (issue 35): ``rota.find``, ``rota.count``, the
bulk ``retry/pause/resume/cancel/delete(matching=...)``, and what a bulk action does to a
worker's claims meanwhile.

One jobs table of rota's schema (its migrations, a fresh table prefix) gets ``--jobs`` jobs by
``INSERT ... SELECT`` on the server (``seq_1_to_N`` / ``generate_series``, ids 1..N), written
as rota writes them, their tags in the tags table. The n-th job was created ``(jobs - n)``
half-seconds ago (a million span 5.8 days, newest id newest); by ``n % 20``: 0 failed with
``TIMEOUT``, 1 failed with ``EXECUTION_FAILED`` (10 % failed), 2 and 3 pending in the queue
``backlog`` that no worker serves (10 %), the rest succeeded a second after creation; tag
``tenant:t<(n div 3) % 10>`` (10 tenants), task one of five by ``(n div 11) % 5``. Then, in one run:

(a) ``find`` (a page of 100), ``--rounds`` calls per filter, p50/p95, and 10 pages deep with
    the cursor; the EXPLAIN of each filter's page query (MariaDB; PostgreSQL's plan's first
    line);
(b) ``count`` of the same filters (fewer calls: a count reads every matching index entry);
(c) bulk actions of 100,000 jobs each at a million: ``retry`` the failed, ``pause`` then
    ``resume`` the backlog, ``cancel`` the retried, ``delete`` the cancelled; seconds per
    10,000 jobs acted on;
(d) meanwhile one ``rota worker`` process (``bench.apps``, queue ``live``, poll 0.1 s) runs
    no-op jobs that another process queues one at a time, 20 a second: claim latency
    (``started_at - run_at``) for the 15 s before the bulk actions, during them, and 10 s
    after, p50/p95, and during / before.

    python -m bench.search_bulk --jobs 20000          # smoke run, a minute
    python -m bench.search_bulk --json bench/results/search_bulk.json
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
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench import scale_data
from bench.common import MYSQL_URL, POSTGRES_URL, Result, percentile
from bench.rota_bench import ROOT, worker_command
from bench.scale_data import app, sql
from rota import Filter, Rota
from rota.core.model import FOLD_LAG

JOBS, CHUNK, SPACING_MS = 1_000_000, 250_000, 500
TASKS = ("send_email", "resize", "report", "sync", "noop_batch")
FEED_PER_SECOND, BEFORE_SECONDS, AFTER_SECONDS, POLL = 20, 15.0, 10.0, "0.1"
ERRORS = {
    "TIMEOUT": ("rota.errors.JobTimeout", "job timed out after 30 s"),
    "EXECUTION_FAILED": ("builtins.RuntimeError", "upstream refused"),
}


def error_json(code: str, at: datetime) -> str:
    kind, message = ERRORS[code]
    entry = {
        "attempt": 1,
        "at": at.isoformat(),
        "code": code,
        "type": kind,
        "message": message,
        "traceback": f"{kind}: {message}\n",
        "worker": "bench:0:fill",
    }
    return json.dumps([entry])


def dialect(backend: str, jobs: int) -> dict[str, str]:
    """Per server: the sequence, its column, integer division, and the n-th job's creation."""
    if backend == "mariadb":
        return {
            "source": "seq_{start}_to_{end}",
            "n": "seq",
            "div": "DIV",
            "created": f"CAST(:now AS DATETIME(6)) - INTERVAL ({jobs} - seq) * "
            f"{SPACING_MS * 1000} MICROSECOND",
            "second": "INTERVAL 1 SECOND",
            "half": "INTERVAL 500000 MICROSECOND",
            "tag": "CONCAT('tenant:t', (id DIV 3) % 10)",
        }
    return {
        "source": "generate_series({start}, {end}) AS g(n)",
        "n": "n",
        "div": "/",
        "created": f"CAST(:now AS TIMESTAMP) - ({jobs} - n) * interval '{SPACING_MS} milliseconds'",
        "second": "interval '1 second'",
        "half": "interval '500 milliseconds'",
        "tag": "'tenant:t' || ((id / 3) % 10)",
    }


def fill(rota: Rota, backend: str, jobs: int, now: datetime) -> None:
    """``jobs`` jobs and their tags, folded into the tallies, then ANALYZE (VACUUM ANALYZE on
    PostgreSQL, as autovacuum would)."""
    store = sql(rota)
    store.migrate()
    table, tags = store.schema.jobs.name, store.schema.job_tags.name
    d = dialect(backend, jobs)
    n, div = d["n"], d["div"]
    kind = f"{n} % 20"
    state = (
        f"CASE WHEN {kind} < 2 THEN 'failed' WHEN {kind} < 4 THEN 'pending' ELSE 'succeeded' END"
    )
    code = f"CASE {kind} WHEN 0 THEN 'TIMEOUT' WHEN 1 THEN 'EXECUTION_FAILED' END"
    errors = f"CASE {kind} WHEN 0 THEN :timeout WHEN 1 THEN :failed END"
    task = "CASE ({n} {div} 11) % 5 " + " ".join(
        f"WHEN {i} THEN '{name}'" for i, name in enumerate(TASKS)
    )
    task = task.format(n=n, div=div) + " END"
    created = d["created"]
    finished = f"CASE WHEN {kind} < 2 OR {kind} >= 4 THEN {created} + {d['second']} END"
    started = f"CASE WHEN {kind} < 2 OR {kind} >= 4 THEN {created} + {d['half']} END"
    attempt = f"CASE WHEN {kind} IN (2, 3) THEN 0 ELSE 1 END"
    owner = f"CASE WHEN {kind} IN (2, 3) THEN NULL ELSE 'bench:0:fill' END"
    queue = f"CASE WHEN {kind} IN (2, 3) THEN 'backlog' ELSE 'default' END"
    columns = (
        "id, namespace, task, queue, priority, state, payload, attempt, max_attempts, run_at, "
        "created_at, started_at, finished_at, lease_owner, cancel_requested, has_dependencies, "
        "errors, error_code"
    )
    values = {
        "now": now,
        "payload": scale_data.PAYLOAD,
        "timeout": error_json("TIMEOUT", now),
        "failed": error_json("EXECUTION_FAILED", now),
    }
    for start in range(1, jobs + 1, CHUNK):
        end = min(jobs, start + CHUNK - 1)
        insert = (
            f"INSERT INTO {table} ({columns}) SELECT {n}, 'default', {task}, {queue}, 0, {state}, "
            f":payload, {attempt}, 1, {created}, {created}, {started}, {finished}, {owner}, "
            f"FALSE, FALSE, {errors}, {code} FROM {d['source'].format(start=start, end=end)}"
        )
        with store.engine.begin() as connection:
            connection.execute(text(insert), values)
            connection.execute(
                text(
                    f"INSERT INTO {tags} (job_id, tag, namespace) SELECT id, {d['tag']}, "
                    f"'default' FROM {table} WHERE id BETWEEN :start AND :end"
                ),
                {"start": start, "end": end},
            )
    with store.engine.connect() as connection:
        top = connection.execute(text(f"SELECT max(id), count(*) FROM {table}")).one()
        if backend == "postgres":  # ids were given: the sequence goes on after them
            connection.execute(
                text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {jobs})")
            )
            connection.commit()
    assert tuple(top) == (jobs, jobs), f"ids are not 1..{jobs}: {top}"
    store.finished.fold(now - FOLD_LAG)
    analyze = "VACUUM ANALYZE {}" if backend == "postgres" else "ANALYZE TABLE {}"
    with store.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        for name in (table, tags):
            connection.execute(text(analyze.format(name)))


def filters(now: datetime, jobs: int) -> dict[str, Filter]:
    span = timedelta(milliseconds=SPACING_MS * jobs)
    return {
        "none": Filter(),
        "state=failed": Filter(state="failed"),
        "tags=[tenant:t3]": Filter(tags=["tenant:t3"]),
        "task=report": Filter(task="report"),
        "error_code=TIMEOUT": Filter(error_code="TIMEOUT"),
        "created_after=1h ago": Filter(created_after=now - timedelta(hours=1)),
        "finished in a 1/6 window": Filter(
            finished_after=now - span / 2, finished_before=now - span / 3
        ),
        "state=failed+tag": Filter(state="failed", tags=["tenant:t3"]),
    }


def timed(call: Callable[[], object], rounds: int) -> tuple[list[float], object]:
    """``rounds`` calls of ``call`` after one untimed; ms each, and the last answer."""
    answer = call()
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        answer = call()
        took.append((time.perf_counter() - start) * 1000)
    return took, answer


def explain(rota: Rota, backend: str, matching: Filter) -> str:
    """The plan of the page query ``find`` sends (its ids; the rows are then read by id)."""
    store = sql(rota)
    query = store.search._page(matching, None, 100)
    compiled = query.compile(dialect=store.engine.dialect, compile_kwargs={"literal_binds": True})
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(f"EXPLAIN {compiled}").all()
    if backend == "postgres":
        return " / ".join(row[0].strip() for row in rows[:4])
    keys = rows[0]._fields
    shown = []
    for row in rows:
        item = dict(zip(keys, row, strict=True))
        shown.append(
            f"{item['table']}: type={item['type']} key={item['key']} rows={item['rows']} "
            f"{item.get('Extra') or ''}".strip()
        )
    return " | ".join(shown)


def stat(values: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(values), "p95": percentile(values, 0.95)}


def searches(
    rota: Rota, backend: str, now: datetime, jobs: int, rounds: int
) -> tuple[list[Result], dict[str, str]]:
    found: list[Result] = []
    plans: dict[str, str] = {}
    for name, matching in filters(now, jobs).items():
        try:
            plans[name] = explain(rota, backend, matching)
        except Exception as error:  # the plan is a help, not a figure
            plans[name] = f"(no plan: {type(error).__name__}: {error})"
        took, page = timed(lambda m=matching: rota.find(m), rounds)
        figures = stat(took)
        counts, total = timed(lambda m=matching: rota.count(m), max(3, rounds // 10))
        count_figures = stat(counts)
        params = {"filter": name, "calls": rounds, "page": len(page.jobs)}  # type: ignore[attr-defined]
        for metric in ("p50", "p95"):
            found.append(
                Result("search", "rota", backend, f"find_{metric}", figures[metric], "ms", params)
            )
            found.append(
                Result(
                    "search",
                    "rota",
                    backend,
                    f"count_{metric}",
                    count_figures[metric],
                    "ms",
                    {"filter": name, "calls": len(counts), "count": total},
                )
            )
        print(
            f"  find {name:22} p50 {figures['p50']:7.1f} ms  p95 {figures['p95']:7.1f} ms  "
            f"({len(page.jobs)} jobs)   count p50 {count_figures['p50']:8.1f} ms "  # type: ignore[attr-defined]
            f"p95 {count_figures['p95']:8.1f} ms  = {total:,}"
        )
        print(f"       plan: {plans[name]}")
    for name in ("none", "tags=[tenant:t3]", "state=failed"):
        matching = filters(now, jobs)[name]
        first: list[float] = []
        tenth: list[float] = []
        walks: list[float] = []
        for _ in range(max(5, rounds // 5)):
            cursor, started = None, time.perf_counter()
            for depth in range(10):
                start = time.perf_counter()
                page = rota.find(matching, cursor=cursor)
                ms = (time.perf_counter() - start) * 1000
                (first if depth == 0 else tenth if depth == 9 else []).append(ms)
                cursor = page.next_cursor
            walks.append((time.perf_counter() - started) * 1000)
        params = {"filter": name, "walks": len(walks), "pages": 10}
        for metric, values in (("page1", first), ("page10", tenth), ("walk10", walks)):
            figures = stat(values)
            for quantile in ("p50", "p95"):
                found.append(
                    Result(
                        "search",
                        "rota",
                        backend,
                        f"{metric}_{quantile}",
                        figures[quantile],
                        "ms",
                        params,
                    )
                )
        print(
            f"  paging {name:20} page 1 p50 {stat(first)['p50']:6.1f} ms, page 10 p50 "
            f"{stat(tenth)['p50']:6.1f} ms, 10 pages p50 {stat(walks)['p50']:7.1f} ms"
        )
    return found, plans


def feed(url: str, prefix: str) -> int:
    """(A child process) queue a no-op job on ``live`` every 1/``FEED_PER_SECOND`` s until
    SIGTERM."""
    rota = app(url, prefix)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    step, next_at = 1 / FEED_PER_SECOND, time.monotonic()
    while not stopping:
        rota.queue("noop", queue="live")
        next_at += step
        time.sleep(max(0.0, next_at - time.monotonic()))
    rota.store.dispose()
    return 0


def start(arguments: list[str], url: str, prefix: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "BENCH_URL": url,
        "BENCH_PREFIX": prefix,
        "BENCH_POLL": POLL,
        "BENCH_CONCURRENCY": "50",
    }
    return subprocess.Popen(arguments, cwd=ROOT, env=env)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def latencies(rota: Rota, low: datetime, high: datetime) -> list[float]:
    """``started_at - run_at`` (ms) of the live jobs due in ``[low, high)``."""
    store = sql(rota)
    jobs = store.schema.jobs
    from sqlalchemy import select

    query = select(jobs.c.run_at, jobs.c.started_at).where(
        jobs.c.queue == "live",
        jobs.c.run_at >= low,
        jobs.c.run_at < high,
        jobs.c.started_at.is_not(None),
    )
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return [(started - due).total_seconds() * 1000 for due, started in rows]


def bulk(rota: Rota, backend: str, url: str, prefix: str, jobs: int) -> list[Result]:
    """(c) and (d): the bulk actions with a worker and a feeder running."""
    worker = start([*worker_command(), "--queues", "live"], url, prefix)
    feeder = start([sys.executable, "-m", "bench.search_bulk", "--feed", url, prefix], url, prefix)
    found: list[Result] = []
    try:
        time.sleep(3.0)  # the worker's start-up: its first claims are not measured
        before_from = datetime.now(timezone.utc)
        time.sleep(BEFORE_SECONDS)
        during_from = datetime.now(timezone.utc)
        actions = (
            ("retry", "failed", Filter(state="failed")),
            ("pause", "backlog pending", Filter(state="pending", queue="backlog")),
            ("resume", "backlog paused", Filter(state="paused", queue="backlog")),
            ("cancel", "retried pending", Filter(state="pending", queue="default")),
            ("delete", "cancelled", Filter(state="cancelled")),
        )
        for action, what, matching in actions:
            start_at = time.perf_counter()
            changed = getattr(rota, action)(matching=matching)
            took = time.perf_counter() - start_at
            per = took / changed * 10_000 if changed else float("nan")
            params = {"jobs": changed, "filter": matching.to_json(), "table": jobs}
            found.append(Result("bulk", "rota", backend, f"{action}_seconds", took, "s", params))
            found.append(
                Result("bulk", "rota", backend, f"{action}_per_10k", per, "s/10k jobs", params)
            )
            print(
                f"  {action:6} {what:16} {changed:>9,} jobs in {took:6.1f} s: "
                f"{per:5.2f} s per 10,000"
            )
        after_from = datetime.now(timezone.utc)
        time.sleep(AFTER_SECONDS)
        after_to = datetime.now(timezone.utc)
        time.sleep(2.0)  # the last jobs' claims
    finally:
        stop(feeder)
        stop(worker)
    phases = {
        "before": latencies(rota, before_from, during_from),
        "during": latencies(rota, during_from, after_from),
        "after": latencies(rota, after_from, after_to),
    }
    for phase, values in phases.items():
        figures = stat(values)
        for metric in ("p50", "p95"):
            found.append(
                Result(
                    "claim",
                    "rota",
                    backend,
                    f"claim_{metric}_{phase}",
                    figures[metric],
                    "ms",
                    {"jobs": len(values), "poll": float(POLL)},
                )
            )
        print(
            f"  claim latency {phase:6} p50 {figures['p50']:6.1f} ms  "
            f"p95 {figures['p95']:6.1f} ms  ({len(values)} jobs)"
        )
    for metric in ("p50", "p95"):
        ratio = stat(phases["during"])[metric] / stat(phases["before"])[metric]
        found.append(
            Result("claim", "rota", backend, f"claim_{metric}_ratio", ratio, "during / before", {})
        )
        print(f"  claim latency {metric} during / before: {ratio:.2f}")
    return found


def measure(
    backend: str, url: str, jobs: int, rounds: int, keep: bool
) -> tuple[list[Result], dict[str, str]]:
    prefix = f"sb{uuid.uuid4().hex[:6]}_"
    rota = app(url, prefix)
    try:
        now = datetime.now(timezone.utc)
        started = time.perf_counter()
        fill(rota, backend, jobs, now)
        took = time.perf_counter() - started
        print(f"{backend}: {jobs:,} jobs filled in {took:.1f} s (prefix {prefix})")
        found = [Result("fill", "rota", backend, "fill_seconds", took, "s", {"jobs": jobs})]
        searched, plans = searches(rota, backend, now, jobs, rounds)
        found += searched
        found += bulk(rota, backend, url, prefix, jobs)
    finally:
        if not keep:
            scale_data.drop(rota, prefix)
        rota.store.dispose()
    return found, plans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("mariadb", "postgres"), default="mariadb")
    parser.add_argument("--url", default=None, help="default: BENCH_MYSQL_URL / BENCH_POSTGRES_URL")
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--rounds", type=int, default=50, help="find calls per filter")
    parser.add_argument("--keep", action="store_true", help="keep the tables")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--feed", nargs=2, metavar=("URL", "PREFIX"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.feed:
        return feed(*options.feed)
    url = options.url or (MYSQL_URL if options.backend == "mariadb" else POSTGRES_URL)
    started = time.perf_counter()
    found, plans = measure(options.backend, url, options.jobs, options.rounds, options.keep)
    print(f"total {time.perf_counter() - started:.0f} s")
    if options.json is not None:
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta: dict[str, Any] = {
            "when": when,
            "jobs": options.jobs,
            "rounds": options.rounds,
            "backend": options.backend,
            "load": os.getloadavg(),
        }
        data = {"meta": meta, "plans": plans, "results": [r.to_json() for r in found]}
        options.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
