"""What a cluster-wide concurrency limit costs: the same jobs with and without it, in one run.

4 ``rota worker`` processes at concurrency 10 run 2,000 jobs of 10 ms over 50 keys, once as a
plain task and once with ``concurrency_limit=1`` per key (50 keys > 40 slots, so the limit
itself leaves the slots enough work: what is measured is the claim's cost of enforcing it).
Plain and limited runs alternate, ``rounds`` times each, on one set of workers, so that both
meet the same machine; jobs/s run from a batch's first claim to its last report, read from
the jobs table.  The figure the flow-control issue asks for is limited / plain, within 30 %.

    python -m bench.flow --backends mariadb,postgres --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys

from sqlalchemy import func, select

from bench.common import Config, Result
from bench.rota_bench import fresh, wait_for, workers
from rota import Enqueue, Rota

PROCESSES, CONCURRENCY, JOBS, KEYS = 4, 10, 2_000, 50
PLAIN, LIMITED = "keyed", "keyed_limited"


def rate(rota: Rota, ids: list[int]) -> float:
    """Jobs/s of one batch, from its first claim to its last report."""
    jobs = rota.store.schema.jobs
    query = select(func.min(jobs.c.started_at), func.max(jobs.c.finished_at)).where(
        jobs.c.id.between(min(ids), max(ids))
    )
    with rota.store.engine.connect() as connection:
        first, last = connection.execute(query).one()
    return len(ids) / (last - first).total_seconds()


def flow_limits(config: Config, backend: str, rounds: int = 3) -> list[Result]:
    rates: dict[str, list[float]] = {PLAIN: [], LIMITED: []}
    with (
        fresh(config, backend) as (rota, url, prefix),
        workers(url, prefix, PROCESSES, CONCURRENCY, poll=0.2, app="bench.flow_app:app"),
    ):
        done = 0
        for _ in range(rounds):
            for task in rates:
                ids = rota.queue_many([Enqueue(task, i % KEYS) for i in range(JOBS)])
                done += JOBS
                wait_for(rota, done, timeout=300)
                rates[task].append(rate(rota, ids))
    plain, limited = rates[PLAIN], rates[LIMITED]
    ratios = [b / a for a, b in zip(plain, limited, strict=True)]
    params = {"processes": PROCESSES, "concurrency": CONCURRENCY, "jobs": JOBS, "keys": KEYS}
    return [
        Result("flow_limit", "rota", backend, "plain_best", max(plain), "jobs/s", params),
        Result("flow_limit", "rota", backend, "limited_best", max(limited), "jobs/s", params),
        Result("flow_limit", "rota", backend, "ratio_median", statistics.median(ratios), "x"),
        Result("flow_limit", "rota", backend, "ratio_worst", min(ratios), "x"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="mariadb,postgres")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    config = Config(backends=tuple(options.backends.split(",")))
    for backend in config.backends:
        for result in flow_limits(config, backend, options.rounds):
            print(f"{backend} {result.scenario} {result.metric}: {result.value:,.2f} {result.unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
