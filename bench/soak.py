"""Load and soak on MariaDB: every job ends once, and worker memory stays flat.

``load``: 100,000 jobs queued with ``queue_many``, then 4 ``rota worker`` processes run them;
every job must end ``succeeded`` at attempt 1, its handler having run exactly once.

``soak``: 4 workers for 10 minutes under a steady enqueue load of mixed tasks (see
``bench/soak_app.py``: sync and async handlers, payloads of a few KB, failures, retries and
timeouts).  Each worker's RSS is sampled every 10 s; after a one-minute warm-up it must stay
flat: neither the growth from the first minute after warm-up to the last minute, nor the
least-squares slope scaled to 10 minutes, may reach ``max(--flat-mib, --flat-percent of the
baseline)`` (5 MiB or 5 %, whichever is larger).  Every job must end as its task dictates, each
attempt run exactly once.

    .venv/bin/python -m bench.soak load soak      # both phases, about 15 minutes
    .venv/bin/python -m bench.soak soak --minutes 2 --rate 200

Runs are counted from the files the handlers append to, not from the jobs table, so a duplicate
or a lost run cannot hide behind rota's own bookkeeping.  Each phase uses a fresh table prefix,
dropped at the end.  The figures are merged into ``bench/results/soak_mariadb.json``; the exit
status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import func, inspect, select, text

from bench.common import peak_rss_mb, rss_mb
from bench.soak_app import EXPECTED
from bench.soak_app import app as template
from rota import Enqueue, Rota

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "soak_mariadb.json"
WORKER = [
    sys.executable,
    "-m",
    "rota",
    "worker",
    "bench.soak_app:app",
    "--log-level",
    "warning",
    "--log-format",
    "json",
]
UNFINISHED = ("pending", "running")


@dataclass
class Fleet:
    """The worker processes of one phase, and where their logs and run records go."""

    processes: list[subprocess.Popen[bytes]]
    run_dir: Path
    exit_codes: list[int | None] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def dead(self) -> list[int]:
        return [process.pid for process in self.processes if process.poll() is not None]

    def rss(self) -> list[float | None]:
        return [_alive(rss_mb, process) for process in self.processes]

    def peak(self) -> list[float | None]:
        return [_alive(peak_rss_mb, process) for process in self.processes]

    def stop(self, timeout: float = 60) -> list[int | None]:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.exit_codes = [process.returncode for process in self.processes]
        return self.exit_codes


def _alive(read: Callable[[int], float], process: subprocess.Popen[bytes]) -> float | None:
    try:
        return round(read(process.pid), 2)
    except (OSError, LookupError):
        return None


@contextmanager
def phase(options: argparse.Namespace, name: str) -> Iterator[tuple[Rota, Fleet]]:
    """A driver ``Rota`` with the soak tasks on a fresh prefix, and a fleet for its workers.

    Whatever happens, the workers are stopped and the prefix's tables dropped (unless
    ``--keep-tables``), so an interrupted run leaves nothing running.
    """
    prefix = f"sk{uuid.uuid4().hex[:8]}_"
    run_dir = Path(options.run_dir) / f"{name}-{prefix.rstrip('_')}"
    run_dir.mkdir(parents=True)
    rota = Rota(options.url, table_prefix=prefix, concurrency=options.concurrency)
    for definition in template.registry:
        rota.define_task(definition)
    rota.jobs()
    fleet = Fleet([], run_dir)
    print(f"[{name}] prefix {prefix}, logs and run records in {run_dir}", flush=True)
    try:
        yield rota, fleet
    finally:
        fleet.stop()
        if options.keep_tables:
            print(f"[{name}] keeping tables {prefix}*", flush=True)
        else:
            drop_tables(rota, prefix)
        rota.store.engine.dispose()


def start_workers(options: argparse.Namespace, rota: Rota, fleet: Fleet) -> None:
    env = {
        **os.environ,
        "BENCH_URL": options.url,
        "BENCH_PREFIX": rota.config.table_prefix,
        "BENCH_CONCURRENCY": str(options.concurrency),
        "SOAK_RECORD_DIR": str(fleet.run_dir),
    }
    for n in range(options.workers):
        log = open(fleet.run_dir / f"worker-{n}.log", "wb")  # noqa: SIM115
        fleet.processes.append(
            subprocess.Popen(WORKER, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        )
        log.close()


def drop_tables(rota: Rota, prefix: str) -> None:
    engine = rota.store.engine
    names = [name for name in inspect(engine).get_table_names() if name.startswith(prefix)]
    with engine.begin() as connection:
        for name in names:
            connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def unfinished(rota: Rota) -> int:
    jobs = rota.store.schema.jobs
    with rota.store.engine.connect() as connection:
        query = select(func.count()).where(jobs.c.state.in_(UNFINISHED))
        return int(connection.execute(query).scalar_one())


def wait_settled(
    rota: Rota, fleet: Fleet, timeout: float, every: Callable[[], None] | None = None
) -> float:
    """Seconds until no job is pending or running; raises when a worker dies or time runs out."""
    start = time.monotonic()
    last = start
    while (left := unfinished(rota)) > 0:
        if fleet.dead():
            raise RuntimeError(f"worker(s) {fleet.dead()} exited with {left} jobs unfinished")
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{left} jobs still pending or running after {timeout:.0f} s")
        if every is not None and time.monotonic() - last >= 10:
            last = time.monotonic()
            every()
        time.sleep(0.5)
    return time.monotonic() - start


def read_runs(run_dir: Path) -> tuple[Counter[tuple[int, int]], dict[int, int]]:
    """Every ``(job, attempt)`` a handler started, with how often, and runs per process."""
    runs: Counter[tuple[int, int]] = Counter()
    per_pid: dict[int, int] = {}
    for path in sorted(run_dir.glob("*.runs")):
        count = 0
        for line in path.read_text().splitlines():
            job_id, attempt, _task = line.split()
            runs[(int(job_id), int(attempt))] += 1
            count += 1
        per_pid[int(path.stem)] = count
    return runs, per_pid


def log_events(run_dir: Path) -> dict[str, int]:
    """Worker log lines by ``level event``; lines that are not JSON (a crash) count as ``raw``."""
    events: Counter[str] = Counter()
    for path in sorted(run_dir.glob("worker-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
                events[f"{record.get('level')} {record.get('event', record.get('message'))}"] += 1
            except (ValueError, AttributeError):
                events["raw"] += 1
    return dict(events.most_common())


def verify(rota: Rota, queued: set[int], run_dir: Path) -> dict[str, Any]:
    """Compare the jobs table and the run records with what each task must end with."""
    jobs = rota.store.schema.jobs
    with rota.store.engine.connect() as connection:
        rows = connection.execute(
            select(
                jobs.c.id,
                jobs.c.task,
                jobs.c.state,
                jobs.c.attempt,
                jobs.c.created_at,
                jobs.c.started_at,
                jobs.c.finished_at,
            )
        ).all()
    runs, per_pid = read_runs(run_dir)
    finals = Counter(f"{row.task} {row.state} attempt={row.attempt}" for row in rows)
    unexpected = [
        {"id": row.id, "task": row.task, "state": row.state, "attempt": row.attempt}
        for row in rows
        if EXPECTED.get(row.task) != (row.state, row.attempt)
    ]
    due = {(row.id, attempt) for row in rows for attempt in range(1, row.attempt + 1)}
    recorded = set(runs)
    in_table = {row.id for row in rows}
    duplicates = {key: count for key, count in runs.items() if count > 1}
    lags = sorted(
        (row.finished_at - row.created_at).total_seconds()
        for row in rows
        if row.finished_at is not None and EXPECTED.get(row.task, ("", 0))[1] == 1
    )
    started = [row.started_at for row in rows if row.started_at is not None]
    finished = [row.finished_at for row in rows if row.finished_at is not None]
    return {
        "jobs_queued": len(queued),
        "jobs_in_table": len(in_table),
        "final_states": dict(sorted(finals.items())),
        "runs_recorded": sum(runs.values()),
        "duplicate_runs": sum(count - 1 for count in duplicates.values()),
        "duplicate_examples": [
            {"id": job, "attempt": attempt, "runs": count}
            for (job, attempt), count in sorted(duplicates.items())[:20]
        ],
        "missing_jobs": len(queued - in_table),
        "jobs_never_run": len(queued - {job for job, _ in recorded}),
        "missing_runs": len(due - recorded),
        "missing_examples": sorted(due - recorded)[:20],
        "extra_runs": len(recorded - due),
        "extra_examples": sorted(recorded - due)[:20],
        "unexpected_final": len(unexpected),
        "unexpected_examples": unexpected[:20],
        "runs_per_process": per_pid,
        "window_s": (max(finished) - min(started)).total_seconds() if finished else None,
        "queued_to_finished_s": _spread(lags),
    }


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 4)

    return {"p50": pick(0.5), "p99": pick(0.99), "max": round(ordered[-1], 4)}


def exact(report: dict[str, Any]) -> bool:
    return (
        not any(
            report[key]
            for key in (
                "duplicate_runs",
                "missing_jobs",
                "jobs_never_run",
                "missing_runs",
                "extra_runs",
                "unexpected_final",
            )
        )
        and report["jobs_in_table"] == report["jobs_queued"]
    )


def run_load(options: argparse.Namespace) -> dict[str, Any]:
    with phase(options, "load") as (rota, fleet):
        queued: set[int] = set()
        print(f"[load] queueing {options.jobs:,} jobs in batches of {options.batch:,}", flush=True)
        start = time.perf_counter()
        for offset in range(0, options.jobs, options.batch):
            size = min(options.batch, options.jobs - offset)
            queued.update(rota.queue_many([Enqueue("noop") for _ in range(size)]))
        enqueue_s = time.perf_counter() - start
        print(f"[load] queued in {enqueue_s:.1f} s; starting {options.workers} workers", flush=True)
        samples: list[list[float | None]] = []
        start_workers(options, rota, fleet)

        def progress() -> None:
            samples.append(fleet.rss())
            print(f"[load] {unfinished(rota):,} left; RSS MiB {samples[-1]}", flush=True)

        error = None
        try:
            run_s = wait_settled(rota, fleet, options.timeout, progress)
        except (RuntimeError, TimeoutError) as exc:
            error, run_s = str(exc), None
            print(f"[load] FAILED: {exc}", flush=True)
        peaks = fleet.peak()
        pids = fleet.pids
        codes = fleet.stop()
        report = verify(rota, queued, fleet.run_dir)
        report["stuck"] = stuck_jobs(rota)
    window = report["window_s"]
    result = {
        "jobs": options.jobs,
        "workers": options.workers,
        "concurrency": options.concurrency,
        "batch": options.batch,
        "enqueue_s": round(enqueue_s, 3),
        "enqueue_jobs_per_s": round(options.jobs / enqueue_s, 1),
        "run_s": round(run_s, 3) if run_s is not None else None,
        "run_jobs_per_s": round(options.jobs / run_s, 1) if run_s else None,
        "window_jobs_per_s": round(options.jobs / window, 1) if window else None,
        "peak_rss_mib": dict(zip(map(str, pids), peaks, strict=True)),
        "rss_samples_mib": samples,
        "exit_codes": codes,
        "error": error,
        "log_events": log_events(fleet.run_dir),
        "run_dir": str(fleet.run_dir),
        **report,
    }
    result["runs_per_process"] = {str(pid): report["runs_per_process"].get(pid, 0) for pid in pids}
    result["ok"] = error is None and exact(report) and codes == [0] * len(codes)
    return result


def stuck_jobs(rota: Rota) -> list[dict[str, Any]]:
    """Evidence for a job left pending or running: its row, as the workers left it."""
    jobs = rota.store.schema.jobs
    with rota.store.engine.connect() as connection:
        rows = connection.execute(
            select(
                jobs.c.id,
                jobs.c.task,
                jobs.c.state,
                jobs.c.attempt,
                jobs.c.run_at,
                jobs.c.lease_owner,
                jobs.c.lease_until,
            )
            .where(jobs.c.state.in_(UNFINISHED))
            .limit(20)
        ).all()
    return [{k: str(v) for k, v in row._mapping.items()} for row in rows]


def soak_request(rng: random.Random) -> Enqueue:
    """One job of the soak mix: 70 % tick, 20 % blob, 5 % flaky, 3 % slow, 2 % doomed."""
    pick = rng.random() * 100
    if pick < 70:
        return Enqueue("tick", rng.randint(10, 1_000))
    if pick < 90:
        data = rng.randbytes(rng.randint(512, 4_096)).hex()
        return Enqueue("blob", data=data, meta={"size": len(data), "tags": ["soak"] * 8})
    if pick < 95:
        return Enqueue("flaky")
    if pick < 98:
        return Enqueue("slow")
    return Enqueue("doomed", rng.randbytes(1_024).hex())


def run_soak(options: argparse.Namespace) -> dict[str, Any]:
    seconds = options.minutes * 60
    rng = random.Random(options.seed)
    with phase(options, "soak") as (rota, fleet):
        start_workers(options, rota, fleet)
        while (
            len(rota.store.cluster.workers(rota.clock.now() - timedelta(minutes=1)))
            < options.workers
        ):
            if fleet.dead():
                raise RuntimeError(f"worker(s) {fleet.dead()} exited at start")
            time.sleep(0.2)
        print(
            f"[soak] {options.workers} workers up; {options.rate:g} jobs/s for "
            f"{options.minutes:g} min",
            flush=True,
        )
        queued: set[int] = set()
        samples: list[dict[str, Any]] = []
        interval = options.batch_interval
        start = time.monotonic()
        next_batch = next_sample = start
        error = None
        while (now := time.monotonic()) < start + seconds:
            if fleet.dead():
                error = f"worker(s) {fleet.dead()} exited during the soak"
                break
            if now >= next_sample:
                backlog = unfinished(rota)
                samples.append(
                    {"t": round(now - start, 1), "rss": fleet.rss(), "unfinished": backlog}
                )
                print(
                    f"[soak] t={now - start:5.0f} s queued {len(queued):,} "
                    f"unfinished {backlog:,} RSS MiB {samples[-1]['rss']}",
                    flush=True,
                )
                next_sample += options.sample
            if now >= next_batch:
                due = max(1, round(options.rate * interval))
                queued.update(rota.queue_many([soak_request(rng) for _ in range(due)]))
                next_batch = max(next_batch + interval, time.monotonic() - 5 * interval)
            time.sleep(max(0.0, min(next_batch, next_sample) - time.monotonic()))
        enqueue_s = time.monotonic() - start
        drain_s = None
        if error is None:
            try:
                drain_s = wait_settled(rota, fleet, options.timeout)
            except (RuntimeError, TimeoutError) as exc:
                error = str(exc)
        final_rss = fleet.rss()
        peaks = fleet.peak()
        pids = fleet.pids
        codes = fleet.stop()
        report = verify(rota, queued, fleet.run_dir)
        report["stuck"] = stuck_jobs(rota)
    memory = {
        str(pid): judge(
            [(s["t"], s["rss"][n]) for s in samples if s["rss"][n] is not None], options
        )
        for n, pid in enumerate(pids)
    }
    for n, pid in enumerate(pids):
        memory[str(pid)]["final_mib"] = final_rss[n]
        memory[str(pid)]["peak_mib"] = peaks[n]
    flat = all(worker["flat"] for worker in memory.values())
    result = {
        "workers": options.workers,
        "concurrency": options.concurrency,
        "minutes": options.minutes,
        "target_rate": options.rate,
        "jobs": len(queued),
        "enqueue_jobs_per_s": round(len(queued) / enqueue_s, 1),
        "drain_s": round(drain_s, 2) if drain_s is not None else None,
        "warmup_s": options.warmup,
        "flat_limit": f"max({options.flat_mib} MiB, {options.flat_percent} % of baseline)",
        "memory": memory,
        "memory_flat": flat,
        "samples": samples,
        "exit_codes": codes,
        "error": error,
        "log_events": log_events(fleet.run_dir),
        "run_dir": str(fleet.run_dir),
        **report,
    }
    result["runs_per_process"] = {str(pid): report["runs_per_process"].get(pid, 0) for pid in pids}
    result["ok"] = error is None and flat and exact(report) and codes == [0] * len(codes)
    return result


def judge(points: list[tuple[float, float]], options: argparse.Namespace) -> dict[str, Any]:
    """One worker's RSS: baseline after warm-up, last minute, slope; and whether it is flat.

    The baseline is the mean of the first minute after warm-up and the end the mean of the last
    minute, so one sample taken during a burst of work does not decide.
    """
    after = [(t, rss) for t, rss in points if t >= options.warmup]
    if len(after) < 2:
        return {"flat": False, "why": "fewer than 2 samples after warm-up"}
    end = after[-1][0]
    baseline = statistics.fmean(rss for t, rss in after if t < options.warmup + 60)
    last = statistics.fmean(rss for t, rss in after if t > end - 60)
    ts = [t for t, _ in after]
    ys = [rss for _, rss in after]
    slope = statistics.linear_regression(ts, ys).slope * 600
    limit = max(options.flat_mib, baseline * options.flat_percent / 100)
    growth = last - baseline
    return {
        "at_1min_mib": after[0][1],
        "baseline_mib": round(baseline, 2),
        "last_minute_mib": round(last, 2),
        "max_mib": max(rss for _, rss in points),
        "growth_mib": round(growth, 2),
        "slope_mib_per_10min": round(slope, 3),
        "limit_mib": round(limit, 2),
        "flat": growth < limit and slope < limit,
    }


def machine(url: str) -> dict[str, Any]:
    engine = Rota(url).store.engine
    try:
        with engine.connect() as connection:
            server = connection.execute(text("SELECT VERSION()")).scalar_one()
    finally:
        engine.dispose()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "python": platform.python_version(),
        "server": server,
        "commit": commit,
    }


def summarise(name: str, result: dict[str, Any]) -> None:
    print(f"\n== {name}: {'OK' if result['ok'] else 'FAILED'}")
    if result.get("error"):
        print(f"error: {result['error']}")
    if name == "load":
        print(
            f"enqueue {result['jobs']:,} jobs: {result['enqueue_s']:.1f} s "
            f"({result['enqueue_jobs_per_s']:,.0f} jobs/s)"
        )
        if result["run_s"]:
            print(
                f"run with {result['workers']} workers: {result['run_s']:.1f} s wall "
                f"({result['run_jobs_per_s']:,.0f} jobs/s incl. start-up), "
                f"{result['window_jobs_per_s']:,.0f} jobs/s first claim to last report"
            )
        print(f"peak RSS MiB per worker: {result['peak_rss_mib']}")
    else:
        print(
            f"{result['jobs']:,} jobs over {result['minutes']:g} min "
            f"({result['enqueue_jobs_per_s']:,.0f} jobs/s queued), drained in {result['drain_s']} s"
        )
        for pid, memory in result["memory"].items():
            print(
                f"worker {pid}: {memory.get('at_1min_mib')} MiB at 1 min, "
                f"{memory.get('last_minute_mib')} last minute, max {memory.get('max_mib')}, "
                f"slope {memory.get('slope_mib_per_10min')} MiB/10 min, "
                f"{'flat' if memory['flat'] else 'NOT FLAT'}"
            )
    print(
        f"final states: {result['final_states']}\n"
        f"duplicate runs {result['duplicate_runs']}, missing jobs {result['missing_jobs']}, "
        f"never run {result['jobs_never_run']}, missing runs {result['missing_runs']}, "
        f"extra runs {result['extra_runs']}, unexpected final state {result['unexpected_final']}"
    )
    print(f"runs per process: {result['runs_per_process']}; exit codes {result['exit_codes']}")
    print(f"worker log events: {result['log_events']}")


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.epilog = "\n".join(__doc__.splitlines()[2:])
    parser.add_argument(
        "phases", nargs="*", choices=["load", "soak"], default=["load", "soak"], metavar="PHASE"
    )
    parser.add_argument(
        "--url", default=os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
    )
    parser.add_argument("--workers", type=int, default=4, help="worker processes (4)")
    parser.add_argument("--concurrency", type=int, default=50, help="per worker (50)")
    parser.add_argument("--jobs", type=int, default=100_000, help="load: jobs (100,000)")
    parser.add_argument("--batch", type=int, default=1_000, help="load: jobs per queue_many")
    parser.add_argument("--minutes", type=float, default=10, help="soak: duration (10)")
    parser.add_argument("--rate", type=float, default=300, help="soak: jobs/s queued (300)")
    parser.add_argument("--batch-interval", type=float, default=0.5, help="soak: s per batch")
    parser.add_argument("--sample", type=float, default=10, help="soak: s between RSS samples")
    parser.add_argument("--warmup", type=float, default=60, help="soak: s left out of the slope")
    parser.add_argument("--flat-mib", type=float, default=5.0)
    parser.add_argument("--flat-percent", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1_800, help="s to wait for a drain")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"default {RESULTS}")
    parser.add_argument("--run-dir", default="/tmp/rota-soak", help="worker logs, run records")
    parser.add_argument("--keep-tables", action="store_true", help="leave the tables to inspect")
    parser.add_argument("--keep-records", action="store_true", help="keep the run dir on success")
    options = parser.parse_args()
    phases = list(dict.fromkeys(options.phases))
    results: dict[str, Any] = json.loads(options.json.read_text()) if options.json.exists() else {}
    results.pop("machine", None)
    ok = True
    for name in phases:
        before = machine(options.url)
        result = run_load(options) if name == "load" else run_soak(options)
        result["machine"] = {**before, "loadavg_after": os.getloadavg()}
        results[name] = result
        summarise(name, result)
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
        if result["ok"] and not options.keep_records:
            shutil.rmtree(result["run_dir"], ignore_errors=True)
        ok = ok and result["ok"]
    print(f"\nresults in {options.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
