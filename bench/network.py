"""Throughput with a network between the worker and the database (issue 18, target 6).

This kernel has no ``netem``, so the worker, the bare claim loop and the round-trip probe reach
the server through a forwarder in this process (``tests.faults.network.proxy``, the fault
tests' own) that holds every answer for ``DELAY`` before handing it on: each round trip costs
at least a millisecond more, as between two hosts of one data centre.  What batching buys
shows in rota's figures at concurrency 50 and 200 beside the bare loop's at batch 100, each
sending a few statements per batch, not per job.

    python -m bench.network --backends mariadb,postgres
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from sqlalchemy.engine import make_url
from tests.faults.network import proxy

from bench import bare, rota_bench
from bench.common import Config, Result

DELAY = 0.001
PROBES = 200


def network(config: Config, backend: str) -> list[Result]:
    url = make_url(config.url(backend))
    target = (url.host or "127.0.0.1", url.port or (3306 if backend == "mariadb" else 5432))
    with proxy(("127.0.0.1", 0), target, delay=DELAY) as forwarder:
        far_url = url.set(host="127.0.0.1", port=forwarder.port).render_as_string(False)
        field = "mysql_url" if backend == "mariadb" else "postgres_url"
        far = replace(config, **{field: far_url})
        rtt = {"loopback": round_trip(config, backend), "network": round_trip(far, backend)}
        params = {"delay_ms": DELAY * 1000, "rtt_ms": round(rtt["network"], 3)}
        results = [
            Result("network", "bare", backend, f"rtt_{where}", ms, "ms", {})
            for where, ms in rtt.items()
        ]
        measured = bare.claim(far, backend)
        for concurrency in (50, 200):
            measured += rota_bench.throughput(far, backend, 1, concurrency)
    return results + [
        replace(result, scenario="network", params={**result.params, **params})
        for result in measured
        if result.scenario == "throughput"
    ]


def round_trip(config: Config, backend: str) -> float:
    """The median milliseconds of a ``SELECT 1`` on a plain driver connection."""
    with bare.connect(config, backend) as connection:
        took = []
        with connection.cursor() as cursor:
            for _ in range(PROBES):
                start = time.perf_counter()
                cursor.execute("SELECT 1")
                cursor.fetchall()
                took.append(time.perf_counter() - start)
        return statistics.median(took) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="mariadb,postgres")
    parser.add_argument("--jobs", type=int, default=20_000)
    options = parser.parse_args()
    config = Config(backends=tuple(options.backends.split(",")), jobs=options.jobs)
    for backend in config.backends:
        for result in network(config, backend):
            print(f"{backend} {result.system} {result.metric}: {result.value:,.2f} {result.unit}")


if __name__ == "__main__":
    main()
