"""APScheduler 3 against rota on MariaDB, each run as 2 replica processes sharing one database.

Our users run several replicas of one service; this measures what each library does there.

1. ``scheduled_lag``: N one-off jobs at known times (APScheduler ``date`` jobs in one shared
   ``SQLAlchemyJobStore``; rota ``queue(run_at=...)``), then 2 replicas start.  Lag from the
   scheduled time to the handler's start, executions beyond one per job, jobs never run.
2. ``cron_replicas``: the fastest recurring trigger each library offers honestly.  APScheduler:
   ``interval`` of 1 s for a few seconds in 2 replicas, executions per run time.  rota's floor is
   the minute (``* * * * *``), measured by ``bench/cron_lag.py``; its figures are included when
   ``--rota-cron-json`` names that benchmark's JSON output.

    python -m bench.peers.apscheduler_peer [--quick] [--rota-cron-json bench/results/X.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.engine import Engine

from bench.common import Config, Result, summary
from bench.peers.sched_app import (
    READY,
    RECORD_REF,
    RECORD_TASK,
    TICK_JOB,
    TICK_REF,
    aps_scheduler,
    driver_url,
    make_rota,
    runs_table,
)

ROOT = Path(__file__).resolve().parents[2]
BACKEND = "mariadb"
REPLICAS = 2
APS = "apscheduler3"
# A BackgroundScheduler whose loop raised: the process lives on and schedules nothing more.
THREAD_DIED = "Exception in thread APScheduler"


@dataclass(frozen=True)
class Plan:
    """How much work: ``jobs`` one-offs ``spacing`` s apart from ``lead`` s after enqueueing."""

    jobs: int
    spacing: float
    lead: float
    settle: float
    ticks: int

    @classmethod
    def of(cls, config: Config) -> Plan:
        if config.quick:
            return cls(jobs=20, spacing=0.2, lead=5.0, settle=4.0, ticks=6)
        return cls(jobs=100, spacing=0.2, lead=5.0, settle=5.0, ticks=20)


@dataclass
class Replica:
    """One started process, its log, and when its readiness line appeared."""

    process: subprocess.Popen[bytes]
    log: Path
    spawned: float
    ready: float | None = None
    exit_code: int | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Outcome:
    """What one system did: the executions and how its replicas behaved."""

    rows: list[Any]
    replicas: list[Replica] = field(default_factory=list)
    enqueue_s: float = 0.0


def replica_command(system: str) -> list[str]:
    if system == APS:
        code = "from bench.peers.sched_app import run_apscheduler; run_apscheduler()"
        return [sys.executable, "-c", code]
    code = "from rota.cli import main; main()"
    return [
        sys.executable,
        "-c",
        code,
        "worker",
        "bench.peers.sched_app:app",
        "--log-level",
        "info",
    ]


def ready_marker(system: str) -> str:
    return READY if system == APS else "worker.started"


@contextmanager
def replicas(system: str, env: dict[str, str], logdir: Path) -> Iterator[list[Replica]]:
    """Start the replicas; whatever happens, SIGTERM them, wait, and kill what stays."""
    started: list[Replica] = []
    try:
        for index in range(REPLICAS):
            log = logdir / f"{system}-{index}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    replica_command(system), cwd=ROOT, env=env, stdout=sink, stderr=sink
                )
            started.append(Replica(process, log, time.time()))
        yield started
    finally:
        for replica in started:
            if replica.process.poll() is None:
                replica.process.send_signal(signal.SIGTERM)
        for replica in started:
            try:
                replica.exit_code = replica.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.exit_code = replica.process.wait()


def watch(system: str, started: list[Replica], until: float) -> None:
    """Wait until ``until``, noting when each replica said it was ready."""
    marker = ready_marker(system)
    while time.time() < until:
        for replica in started:
            if replica.ready is None and marker in replica.log_text():
                replica.ready = time.time()
        time.sleep(0.1)


def drop_tables(engine: Engine, prefix: str) -> None:
    """Drop every table of this run; names are matched in Python since ``_`` is a LIKE wildcard."""
    names = [name for name in inspect(engine).get_table_names() if name.startswith(prefix)]
    with engine.begin() as connection:
        for name in names:
            connection.execute(text(f"DROP TABLE IF EXISTS `{name}`"))


@contextmanager
def run_tables(url: str, tag: str) -> Iterator[tuple[Engine, str]]:
    prefix = f"bpa{os.getpid()}{tag}_"  # rota allows 20 characters
    engine = create_engine(driver_url(url), pool_pre_ping=True)
    try:
        drop_tables(engine, prefix)
        runs_table(prefix).create(engine)
        yield engine, prefix
    finally:
        drop_tables(engine, prefix)
        engine.dispose()


def fetch_runs(engine: Engine, prefix: str) -> list[Any]:
    table = runs_table(prefix)
    with engine.connect() as connection:
        return list(connection.execute(select(table).order_by(table.c.started)).all())


def exercise(
    system: str,
    url: str,
    logdir: Path,
    plan: Plan,
    enqueue: Callable[[str, str, float], float],
    finish_after: Callable[[float], float],
    tag: str,
) -> tuple[Outcome, float]:
    """Create the tables, enqueue (before any replica starts), run the replicas, collect rows."""
    with run_tables(url, tag) as (engine, prefix):
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "BENCH_URL": url, "BENCH_PREFIX": prefix, "PYTHONPATH": path}
        began = time.time()
        first = enqueue(url, prefix, began + plan.lead)
        outcome = Outcome(rows=[], enqueue_s=time.time() - began)
        with replicas(system, env, logdir) as started:
            outcome.replicas = started
            watch(system, started, finish_after(first))
        outcome.rows = fetch_runs(engine, prefix)
        return outcome, first


def scheduled_lag(system: str, url: str, logdir: Path, plan: Plan) -> list[Result]:
    times: list[float] = []

    def enqueue(url: str, prefix: str, start: float) -> float:
        times.extend(start + index * plan.spacing for index in range(plan.jobs))
        if system == APS:
            scheduler = aps_scheduler(url, prefix)
            scheduler.start(paused=True)
            try:
                for index, at in enumerate(times):
                    scheduler.add_job(
                        RECORD_REF,
                        "date",
                        run_date=datetime.fromtimestamp(at, timezone.utc),
                        args=[job_key(index), at],
                        id=job_key(index),
                    )
            finally:
                scheduler.shutdown(wait=False)
        else:
            app = make_rota(url, prefix)
            try:
                for index, at in enumerate(times):
                    app.queue(
                        RECORD_TASK,
                        job_key(index),
                        at,
                        run_at=datetime.fromtimestamp(at, timezone.utc),
                    )
            finally:
                app.store.engine.dispose()
        return start

    outcome, first = exercise(
        system,
        url,
        logdir,
        plan,
        enqueue,
        lambda first: first + (plan.jobs - 1) * plan.spacing + plan.settle,
        tag=system[0],
    )
    runs = Counter(row.job_key for row in outcome.rows)
    first_starts: dict[str, float] = {}
    for row in outcome.rows:
        first_starts.setdefault(row.job_key, row.started - row.scheduled)
    params = {
        "processes": REPLICAS,
        "jobs": plan.jobs,
        "spacing_s": plan.spacing,
        "lead_s": plan.lead,
        "executions": len(outcome.rows),
        "lag_of": "first execution of each job",
        **replica_params(system, outcome, first),
        **defaults(system),
    }
    figures = {
        "duplicate_runs": sum(count - 1 for count in runs.values()),
        "missed_runs": sum(1 for index in range(plan.jobs) if job_key(index) not in runs),
    }
    return lag_results("scheduled_lag", system, list(first_starts.values()), figures, params)


def cron_replicas(url: str, logdir: Path, plan: Plan) -> list[Result]:
    """APScheduler ``interval`` seconds=1 in 2 replicas: executions per run time."""
    ticks: list[float] = []

    def enqueue(url: str, prefix: str, start: float) -> float:
        first = float(math.ceil(start))
        ticks.extend(first + index for index in range(plan.ticks))
        scheduler = aps_scheduler(url, prefix)
        scheduler.start(paused=True)
        try:
            scheduler.add_job(
                TICK_REF,
                "interval",
                seconds=1,
                start_date=datetime.fromtimestamp(first, timezone.utc),
                end_date=datetime.fromtimestamp(ticks[-1] + 0.5, timezone.utc),
                id=TICK_JOB,
            )
        finally:
            scheduler.shutdown(wait=False)
        return first

    outcome, first = exercise(
        APS,
        url,
        logdir,
        plan,
        enqueue,
        lambda first: first + plan.ticks - 1 + plan.settle,
        tag="c",
    )
    runs = Counter(round(row.scheduled, 3) for row in outcome.rows)
    first_starts: dict[float, float] = {}
    for row in outcome.rows:
        first_starts.setdefault(round(row.scheduled, 3), row.started - row.scheduled)
    expected = {round(tick, 3) for tick in ticks}
    params = {
        "processes": REPLICAS,
        "trigger": "interval seconds=1",
        "ticks": plan.ticks,
        "executions": len(outcome.rows),
        "unexpected_run_times": len(set(runs) - expected),
        "rota": "not run here: rota's cron floor is the minute; see bench/cron_lag.py",
        **replica_params(APS, outcome, first),
        **defaults(APS),
    }
    figures = {
        "duplicate_runs": sum(count - 1 for count in runs.values()),
        "missed_runs": len(expected - set(runs)),
    }
    return lag_results("cron_replicas", APS, list(first_starts.values()), figures, params)


def rota_cron_results(path: Path) -> list[Result]:
    """Re-label ``bench/cron_lag.py`` output (minute ticks, 2 workers) for the same table."""
    figures = json.loads(path.read_text())
    params = {
        "processes": figures["workers"],
        "trigger": "* * * * * (rota's floor: minute cron)",
        "ticks": figures["ticks"],
        "executions": figures["runs"],
        "source": f"bench/cron_lag.py via {path.name}",
        "duplicates_note": "the tick is the primary key of cron_lag's table: a second run fails",
    }
    ran = figures["ticks"] - len(figures["missing"])
    results = [
        Result("cron_replicas", "rota", BACKEND, metric, figures[key], "s", params)
        for metric, key in (("p50", "p50_s"), ("p99", "p99_s"))
        if figures.get(key) is not None
    ]
    results.append(
        Result(
            "cron_replicas",
            "rota",
            BACKEND,
            "duplicate_runs",
            max(0, figures["runs"] - ran),
            "runs",
            params,
        )
    )
    results.append(
        Result(
            "cron_replicas", "rota", BACKEND, "missed_runs", len(figures["missing"]), "runs", params
        )
    )
    return results


def job_key(index: int) -> str:
    return f"j{index:04d}"


def defaults(system: str) -> dict[str, Any]:
    if system == APS:
        return {
            "scheduler": "BackgroundScheduler, SQLAlchemyJobStore",
            "misfire_grace_time_s": 1,
            "coalesce": True,
        }
    return {"worker": "rota worker", "poll_interval_s": 1.0, "concurrency": 5}


def replica_params(system: str, outcome: Outcome, first: float) -> dict[str, Any]:
    """How the replicas fared: readiness, exit codes, tracebacks and misfire warnings logged."""
    logs = [replica.log_text() for replica in outcome.replicas]
    ready = [
        None if replica.ready is None else round(replica.ready - replica.spawned, 2)
        for replica in outcome.replicas
    ]
    late = [replica.ready is None or replica.ready > first for replica in outcome.replicas]
    return {
        "enqueue_s": round(outcome.enqueue_s, 2),
        "ready_s": ready,
        "ready_after_first_due": any(late),
        "exit_codes": [replica.exit_code for replica in outcome.replicas],
        "tracebacks": sum(log.count("Traceback (most recent call last)") for log in logs),
        "misfire_warnings": sum(log.count("was missed by") for log in logs),
        "scheduler_threads_died": sum(log.count(THREAD_DIED) for log in logs),
        "runs_per_process": sorted(Counter(row.pid for row in outcome.rows).values()),
    }


def lag_results(
    scenario: str,
    system: str,
    lags: list[float],
    counts: dict[str, int],
    params: dict[str, Any],
) -> list[Result]:
    results = []
    if lags:
        results = [
            Result(scenario, system, BACKEND, metric, round(value, 4), "s", params)
            for metric, value in summary(lags).items()
        ]
    results += [
        Result(scenario, system, BACKEND, metric, value, "runs", params)
        for metric, value in counts.items()
    ]
    return results


def run(config: Config, rota_cron: Path | None = None) -> list[Result]:
    """Both scenarios on MariaDB; nothing when the run leaves MariaDB out."""
    if BACKEND not in config.backends:
        return []
    plan = Plan.of(config)
    url = config.url(BACKEND)
    logdir = Path(config.workdir) / f"apscheduler-peer-{os.getpid()}"
    logdir.mkdir(parents=True, exist_ok=True)
    results = scheduled_lag(APS, url, logdir, plan)
    results += scheduled_lag("rota", url, logdir, plan)
    results += cron_replicas(url, logdir, plan)
    if rota_cron is not None:
        results += rota_cron_results(rota_cron)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer jobs and ticks")
    parser.add_argument("--rota-cron-json", type=Path, help="bench/cron_lag.py --json output")
    options = parser.parse_args()
    config = Config(backends=(BACKEND,), quick=options.quick)
    for result in run(config, options.rota_cron_json):
        print(json.dumps(result.to_json()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
