"""Claim cost and worker throughput against the size of the pending backlog (issue 32).

For each backend and each case of ``bench.scale_data`` (one queue; 20 queues by 5 priorities in
one pool; half the backlog a day ahead at a more urgent priority), a jobs table per size is
filled by the server, then, in rounds that alternate the sizes' order:

- the claim: ``store.jobs.claim`` of 50 (what a worker at concurrency 50 with every slot free
  asks for), timed through the real store, each claim's jobs put back pending afterwards;
- the throughput: one ``rota worker bench.apps:app --queues ...`` process at concurrency 50 on
  no-op jobs, until ``jobs`` of them have succeeded; jobs/s from its first claim to its last
  report, read from the jobs table (start-up excluded); the jobs are put back afterwards.

Each figure is compared with the smallest size's (10,000 pending; ``--quick``: 1,000): the
target is 1.5 at most. ``--quick`` (10 times smaller sizes) also checks the plans
(``bench.scale_plans``): at 100,000 pending, a claim across 20 queues reads a few pages per
queue, and no claim reads more than 1.5 times what it reads at 10,000 (the jobs scheduled ahead
are not walked past); a plan that reads more fails the run.

    python -m bench.scale --quick
    BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/scale \\
        BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/scale \\
        python -m bench.scale --json bench/results/scale.json --keep
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

from sqlalchemy import func, select

from bench import scale_data, scale_plans
from bench.common import Config, Result
from bench.rota_bench import ROOT, worker_command
from bench.scale_data import CASES, TASKS, Case, app, sql
from rota import Rota

SIZES = {
    "mariadb": (10_000, 100_000, 1_000_000, 3_000_000),
    "postgres": (10_000, 100_000, 1_000_000),
}
QUICK = 10
"""``--quick`` divides the sizes by this."""
LIMIT = 50
TARGET = 1.5


def sizes(backend: str, quick: bool) -> tuple[int, ...]:
    full = SIZES[backend]
    return tuple(size // QUICK for size in full[:3]) if quick else full


def claim_ms(rota: Rota, case: Case, claims: int, untimed: int = 1) -> list[float]:
    """``claims`` claims of ``LIMIT`` (after ``untimed`` ones), each put back; milliseconds."""
    jobs = sql(rota).jobs
    took: list[float] = []
    for number in range(claims + untimed):
        now = datetime.now(timezone.utc)
        start = time.perf_counter()
        taken = jobs.claim("bench-scale", case.queues, TASKS, LIMIT, now, now + timedelta(hours=1))
        elapsed = (time.perf_counter() - start) * 1000
        if len(taken) != LIMIT:
            raise SystemExit(f"{case.name}: a claim took {len(taken)} jobs, not {LIMIT}")
        if number >= untimed:
            took.append(elapsed)
        scale_data.put_back(rota, [job.id for job in taken])
    return took


def throughput(rota: Rota, url: str, prefix: str, case: Case, jobs: int) -> float:
    """Jobs/s of one worker process at concurrency ``LIMIT`` until ``jobs`` succeeded."""
    store = sql(rota)
    table = store.schema.jobs
    env = {
        **os.environ,
        "BENCH_URL": url,
        "BENCH_PREFIX": prefix,
        "BENCH_CONCURRENCY": str(LIMIT),
        "BENCH_POLL": "0.5",
    }
    command = [*worker_command(), "--queues", ",".join(case.queues)]
    worker = subprocess.Popen(command, cwd=ROOT, env=env)
    done = select(func.count()).where(store.database.mine(table), table.c.state == "succeeded")
    try:
        deadline = time.monotonic() + 300
        while True:
            with store.engine.connect() as connection:
                if connection.execute(done).scalar_one() >= jobs:
                    break
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit(f"{case.name}: the worker ran fewer than {jobs} jobs")
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
    window = select(func.count(), func.min(table.c.started_at), func.max(table.c.finished_at))
    with store.engine.connect() as connection:
        ran, first, last = connection.execute(
            window.where(store.database.mine(table), table.c.state == "succeeded")
        ).one()
    scale_data.put_back(rota)
    seconds: float = (last - first).total_seconds()
    return int(ran) / seconds


def measure(config: Config, backend: str, case: Case, options: argparse.Namespace) -> list[Result]:
    """Every size of ``case`` on ``backend``, in ``options.rounds`` alternating rounds."""
    url = config.url(backend)
    chosen = sizes(backend, config.quick)
    apps = {size: app(url, scale_data.prefix(case, size, options.prefix)) for size in chosen}
    try:
        for size, rota in apps.items():
            start = time.perf_counter()
            scale_data.fill(rota, backend, case, size)
            took = time.perf_counter() - start
            print(f"{backend} {case.name} {size:,} pending ({took:.0f} s to fill)", flush=True)
        if config.quick:  # at 100,000 pending against 10,000
            scale_plans.check(apps[chosen[-2]], apps[chosen[-1]], backend, case)
        due = min(chosen) // (2 if case.name == "future_urgent" else 1)
        jobs = min(options.jobs or (400 if config.quick else 5_000), due // 2)
        claims: dict[int, list[float]] = {size: [] for size in chosen}
        rates: dict[int, list[float]] = {size: [] for size in chosen}
        for number in range(options.rounds):
            order = chosen if number % 2 == 0 else tuple(reversed(chosen))
            for size in order:
                rota = apps[size]
                claims[size] += claim_ms(rota, case, options.claims)
                prefix = scale_data.prefix(case, size, options.prefix)
                rates[size].append(throughput(rota, url, prefix, case, jobs))
                print(
                    f"  round {number + 1} {size:>9,}: claim "
                    f"{statistics.median(claims[size][-options.claims :]):7.1f} ms, "
                    f"{rates[size][-1]:7.0f} jobs/s",
                    flush=True,
                )
        return results(backend, case, claims, rates, jobs)
    finally:
        for size, rota in apps.items():
            if not options.keep:
                scale_data.drop(rota, scale_data.prefix(case, size, options.prefix))
            rota.store.dispose()


def results(
    backend: str,
    case: Case,
    claims: dict[int, list[float]],
    rates: dict[int, list[float]],
    jobs: int,
) -> list[Result]:
    base = min(claims)
    base_ms, base_rate = statistics.median(claims[base]), statistics.median(rates[base])
    found = []
    for size in sorted(claims):
        ms, rate = statistics.median(claims[size]), statistics.median(rates[size])
        params = {"case": case.name, "pending": size, "base": base}
        found.append(
            Result(
                "scale",
                "rota",
                backend,
                "claim_ms",
                ms,
                f"ms/claim of {LIMIT}",
                {**params, "ratio": ms / base_ms, "claims": len(claims[size])},
            )
        )
        found.append(
            Result(
                "scale",
                "rota",
                backend,
                "throughput",
                rate,
                "jobs/s",
                {**params, "ratio": base_rate / rate, "jobs": jobs, "runs": len(rates[size])},
            )
        )
    return found


def table(results: list[Result]) -> str:
    """A markdown table: per backend, case and size, the claim and the throughput with the
    ratio to the smallest size (claim: ms / base ms; throughput: base jobs/s / jobs/s)."""
    lines = [
        "| backend | case | pending | claim ms | / base | jobs/s | base / |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    claims = {
        (r.backend, r.params["case"], r.params["pending"]): r
        for r in results
        if r.metric == "claim_ms"
    }
    for r in results:
        if r.metric != "throughput":
            continue
        claim = claims[(r.backend, r.params["case"], r.params["pending"])]
        marks = [
            "" if ratio <= TARGET else " (over)"
            for ratio in (claim.params["ratio"], r.params["ratio"])
        ]
        lines.append(
            f"| {r.backend} | {r.params['case']} | {r.params['pending']:,} | "
            f"{claim.value:.1f} | {claim.params['ratio']:.2f}{marks[0]} | {r.value:,.0f} | "
            f"{r.params['ratio']:.2f}{marks[1]} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 times smaller, plans checked")
    parser.add_argument("--backends", default="mariadb,postgresql")
    parser.add_argument("--cases", default=",".join(case.name for case in CASES))
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (--quick: 1)")
    parser.add_argument("--claims", type=int, default=None, help="per size and round")
    parser.add_argument("--jobs", type=int, default=None, help="per throughput run")
    parser.add_argument("--prefix", default="sc", help="table prefixes start with this")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the tables")
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    options.rounds = options.rounds or (1 if options.quick else 3)
    options.claims = options.claims or (5 if options.quick else 11)
    backends = tuple(
        "postgres" if name.strip() == "postgresql" else name.strip()
        for name in options.backends.split(",")
    )
    config = Config(backends=backends, quick=options.quick)
    chosen = [scale_data.BY_NAME[name] for name in options.cases.split(",")]
    found: list[Result] = []
    for backend in config.backends:
        for case in chosen:
            found += measure(config, backend, case, options)
    print(table(found))
    if options.json is not None:
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta = {"when": when, "quick": options.quick, "limit": LIMIT, "target": TARGET}
        data = {"meta": meta, "results": [result.to_json() for result in found]}
        options.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
