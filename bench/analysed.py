"""Worker throughput on PostgreSQL before and after autovacuum analyses the jobs table.

A third party's harness saw rota fall from about 1,300 to 200 to 600 jobs/s once autovacuum had
analysed the jobs table: with real statistics the claim's estimated cost crossed PostgreSQL's
JIT threshold (default settings, JIT on) and every claim compiled JIT code (issue 32, target
5). Two tables are made alike, each with ``--history`` finished jobs: one never analysed
(autovacuum switched off for it, so the planner keeps its defaults), one analysed (``VACUUM
ANALYZE``, what autovacuum does). Rounds then alternate between them: ``--jobs`` no-op jobs
queued, one ``rota worker`` process at concurrency 64 timed from its first claim to its last
report. Target: the analysed table's throughput within 1.2 times the other's.

    python -m bench.analysed --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import ExitStack

from sqlalchemy import create_engine, func, select, text, update

from bench.common import Config
from bench.rota_bench import fresh, queue_jobs, wait_for, workers
from rota import Rota

CONCURRENCY = 64
TARGET = 1.2


def fill_history(rota: Rota, history: int) -> None:
    queue_jobs(rota, "noop", history)
    jobs = rota.store.schema.jobs
    with rota.store.engine.begin() as connection:
        done = update(jobs).values(state="succeeded", finished_at=func.now())
        connection.execute(done)


def run_round(rota: Rota, url: str, prefix: str, jobs: int) -> float:
    """Jobs/s of one worker process over ``jobs`` new no-op jobs."""
    table = rota.store.schema.jobs
    with rota.store.engine.connect() as connection:
        before = connection.execute(select(func.max(table.c.id))).scalar_one()
    queue_jobs(rota, "noop", jobs)
    total = before + jobs  # the history's jobs are finished too: count them with the new
    with workers(url, prefix, 1, CONCURRENCY):
        wait_for(rota, total, timeout=600)
    fresh_jobs = table.c.id > before
    with rota.store.engine.connect() as connection:
        first, last = connection.execute(
            select(func.min(table.c.started_at), func.max(table.c.finished_at)).where(fresh_jobs)
        ).one()
    return jobs / (last - first).total_seconds()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    config = Config(backends=("postgres",))
    plain = create_engine(config.postgres_url.replace("postgresql://", "postgresql+psycopg://"))
    with plain.connect() as connection:
        jit = connection.execute(text("SHOW jit")).scalar_one()
    plain.dispose()
    print(f"the server's jit setting, as a plain session sees it: {jit}")
    with ExitStack() as stack:
        tables = {
            name: stack.enter_context(fresh(config, "postgres"))
            for name in ("not analysed", "analysed")
        }
        for name, (rota, _, prefix) in tables.items():
            fill_history(rota, options.history)
            with rota.store.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                jobs = rota.store.schema.jobs.name
                if name == "analysed":
                    connection.execute(text(f"VACUUM ANALYZE {jobs}"))
                else:
                    connection.execute(text(f"ALTER TABLE {jobs} SET (autovacuum_enabled = false)"))
            print(f"{name}: {prefix}jobs, {options.history:,} finished jobs")
        rates: dict[str, list[float]] = {name: [] for name in tables}
        for number in range(options.rounds):
            for name, (rota, url, prefix) in tables.items():
                rate = run_round(rota, url, prefix, options.jobs)
                rates[name].append(rate)
                print(f"round {number + 1}, {name}: {rate:,.0f} jobs/s", flush=True)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    ratio = medians["not analysed"] / medians["analysed"]
    print(
        f"median jobs/s: not analysed {medians['not analysed']:,.0f}, analysed "
        f"{medians['analysed']:,.0f}; ratio {ratio:.2f} (target ≤ {TARGET})"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
