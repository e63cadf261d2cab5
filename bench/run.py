"""Run every benchmark scenario on the chosen backends, with the peers, in one run.

    python -m bench.run              # everything (about 20 minutes)
    python -m bench.run --quick      # small sizes, to check the harness
    python -m bench.run --backends mariadb --no-peers

Prints a table and the rota/peer ratios, and writes ``bench/results/latest.json``,
``latest.md`` and ``latest.png``.  Cron lag takes ten real minutes, so it has its own command
(``python -m bench.cron_lag``); its latest result file is included here when present.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from bench import bare, flow, idle, inspection, network, rota_bench
from bench.common import Config, Result
from bench.report import baselines, chart, ratios, table

RESULTS = Path(__file__).resolve().parent / "results"
PROCESSES = (1, 2, 4)
CONCURRENCY = (10, 50, 200)


def rota_scenarios(config: Config, backend: str) -> list[Callable[[], list[Result]]]:
    steps: list[Callable[[], list[Result]]] = [lambda: bare.enqueue(config, backend)]
    for processes in PROCESSES:
        if processes == 1 and backend != "sqlite":
            # Right before the one-process runs it is compared with (DESIGN.md's budget).
            steps.append(lambda: bare.claim(config, backend))
            steps.append(lambda: rota_bench.throughput(config, backend, 1, 50, logged=True))
        for concurrency in CONCURRENCY:
            steps.append(
                lambda p=processes, c=concurrency: rota_bench.throughput(config, backend, p, c)
            )
    steps += [
        lambda: rota_bench.throughput(config, backend, 2, 100, task="sleep10"),
        lambda: rota_bench.latency(config, backend),
        lambda: rota_bench.queries_per_job(config, backend),
        lambda: rota_bench.history(config, backend),
    ]
    if backend != "sqlite":
        steps.append(lambda: flow.flow_limits(config, backend))
        steps.append(lambda: idle.idle(config, backend))
        steps.append(lambda: network.network(config, backend))
        if not config.quick:  # 5,000,000 rows to fill: minutes, not a smoke run
            steps.append(lambda: inspection.inspection(config, backend))
    return steps


def peer_scenarios(config: Config) -> list[Callable[[], list[Result]]]:
    steps: list[Callable[[], list[Result]]] = []
    if "postgres" in config.backends:
        from bench.peers import pgqueuer_peer, procrastinate_peer

        steps += [lambda: procrastinate_peer.run(config), lambda: pgqueuer_peer.run(config)]
    if "mariadb" in config.backends:
        from bench.peers import apscheduler_peer

        cron = RESULTS / "cron_lag_mariadb.json"
        steps.append(lambda: apscheduler_peer.run(config, cron if cron.exists() else None))
    return steps


def cron_lag_results() -> list[Result]:
    path = RESULTS / "cron_lag_mariadb.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    params = {"processes": data["workers"], "ticks": data["ticks"], "file": path.name}
    return [
        Result("cron_lag", "rota", "mariadb", key, data[f"{key}_s"] * 1000, "ms", params)
        for key in ("p50", "p99", "max")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default="sqlite,mariadb,postgres")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--jobs", type=int, default=None)
    options = parser.parse_args()
    jobs = options.jobs or (2_000 if options.quick else 20_000)
    config = Config(backends=tuple(options.backends.split(",")), jobs=jobs, quick=options.quick)
    steps = [step for backend in config.backends for step in rota_scenarios(config, backend)]
    if not options.no_peers:
        steps += peer_scenarios(config)
    results: list[Result] = []
    failures = 0
    for number, step in enumerate(steps, 1):
        try:
            produced = step()
        except Exception:
            failures += 1
            traceback.print_exc()
            continue
        for result in produced:
            print(
                f"[{number}/{len(steps)}] {result.system} {result.backend} {result.scenario} "
                f"{result.metric}: {result.value:,.3f} {result.unit}",
                flush=True,
            )
        results += produced
    results += cron_lag_results()
    write(results, config)
    print(table(results))
    print()
    print(ratios(results))
    print()
    print(baselines(results))
    return 1 if failures else 0


def write(results: list[Result], config: Config) -> None:
    RESULTS.mkdir(exist_ok=True)
    meta = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "jobs": config.jobs,
        "quick": config.quick,
    }
    stem = "quick" if config.quick else "latest"
    (RESULTS / f"{stem}.json").write_text(
        json.dumps({"meta": meta, "results": [r.to_json() for r in results]}, indent=1)
    )
    (RESULTS / f"{stem}.md").write_text(
        f"Run of {meta['when']} (Python {meta['python']}, {config.jobs} jobs per throughput "
        f"run)\n\n{table(results)}\n\n## rota / peer\n\n{ratios(results)}\n\n"
        f"## rota / bare SQL\n\n{baselines(results)}\n"
    )
    chart(results, RESULTS / f"{stem}.png")


if __name__ == "__main__":
    sys.exit(main())
