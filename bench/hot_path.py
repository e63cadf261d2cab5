"""The cost of a job in one worker process, against the bare SQL a queue must run (issue 33).

Per backend, in alternating rounds so that the machine's drift weighs on all alike: the bare
claim/complete loop (``bench.bare``), then one ``rota worker`` process running no-op jobs at
concurrency 50 and 200, a sync no-op handler at 50, and at 50 with the execution log at INFO
written to a file; then ``queue()`` and ``queue_many()`` against bare ``INSERT`` + ``COMMIT``
and the bare multi-row ``INSERT``. It prints each figure, the median over the rounds of each
ratio, and the worker's CPU per job (``/proc``: user and system time from its first finished
job to its last, over the jobs finished meanwhile).

    python -m bench.hot_path                      # MariaDB and PostgreSQL, 3 rounds
    python -m bench.hot_path --backends mariadb --rounds 1 --jobs 5000
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from bench import bare, rota_bench
from bench.common import Config, Result

RUNS: dict[str, Callable[[Config, str], list[Result]]] = {
    "bare": bare.claim,
    "c50": lambda config, backend: rota_bench.throughput(config, backend, 1, 50),
    "c200": lambda config, backend: rota_bench.throughput(config, backend, 1, 200),
    "c50 sync": lambda config, backend: rota_bench.throughput(
        config, backend, 1, 50, task="noop_sync"
    ),
    "c50 logged": lambda config, backend: rota_bench.throughput(
        config, backend, 1, 50, logged=True
    ),
    "enqueue": bare.enqueue,
}
TARGETS = {
    "c50 / bare loop": 0.50,
    "c200 / bare loop": 0.75,
    "logged / unlogged (c50)": 0.90,
    "queue() / bare INSERT": 0.80,
    "queue_many() / bare multi-row INSERT": 0.60,
}


def figures(results: list[Result]) -> dict[str, float]:
    """One round's figures by name."""
    found: dict[str, float] = {}
    for result in results:
        concurrency = result.params.get("concurrency")
        if result.scenario == "throughput" and result.system == "bare":
            found["bare loop"] = result.value
        elif result.scenario in ("throughput", "cpu"):
            logged = " logged" if "log" in result.params else ""
            found[f"{result.metric} c{concurrency}{logged}"] = result.value
        elif result.scenario == "enqueue":
            found[f"{result.system} {result.metric}"] = result.value
    return found


def ratios(found: dict[str, float]) -> dict[str, float]:
    bare_loop = found["bare loop"]
    shown = {
        "c50 / bare loop": found["noop c50"] / bare_loop,
        "c200 / bare loop": found["noop c200"] / bare_loop,
        "sync c50 / bare loop": found["noop_sync c50"] / bare_loop,
        "logged / unlogged (c50)": found["noop c50 logged"] / found["noop c50"],
    }
    if "bare single" in found:
        shown["queue() / bare INSERT"] = found["rota single"] / found["bare single"]
        shown["queue_many() / bare multi-row INSERT"] = found["rota batch"] / found["bare batch"]
    return shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="mariadb,postgres")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    config = Config(backends=tuple(options.backends.split(",")), jobs=options.jobs)
    report: dict[str, object] = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "jobs": options.jobs,
    }
    for backend in config.backends:
        rounds: list[dict[str, float]] = []
        for number in range(1, options.rounds + 1):
            found: dict[str, float] = {}
            for run in RUNS.values():
                found |= figures(run(config, backend))
            rounds.append(found)
            shown = ", ".join(f"{name} {value:,.0f}" for name, value in found.items())
            print(f"{backend} round {number}: {shown}", flush=True)
        by_name: dict[str, list[float]] = defaultdict(list)
        for found in rounds:
            for name, value in ratios(found).items():
                by_name[name].append(value)
        print(f"\n{backend}: median of {options.rounds} round(s)")
        for name, values in by_name.items():
            target = TARGETS.get(name)
            verdict = "" if target is None else f"  (target ≥ {target:.2f})"
            print(f"  {name}: {statistics.median(values):.2f}{verdict}")
        for task, concurrency in (("noop", 50), ("noop_sync", 50), ("noop", 200)):
            name = f"{task}_cpu_per_job c{concurrency}"
            value = statistics.median(found[name] for found in rounds)
            print(f"  CPU per job, {task} at concurrency {concurrency}: {value:.0f} µs")
        report[backend] = rounds
    if options.json is not None:
        options.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
