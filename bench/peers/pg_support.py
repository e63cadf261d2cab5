"""What the PostgreSQL peers share: a throw-away database, worker processes, the measuring.

Each peer runs in its own database, created for the run and dropped after it, because both
Procrastinate and pgqueuer install their own tables, types, functions and triggers. A peer
module only describes its library (a ``Peer``); ``measure`` runs the same scenarios for each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from bench.common import Config, Result, peak_rss_mb

ROOT = Path(__file__).resolve().parents[2]
HIGH_CONCURRENCY = 50
POLL_S = 0.2


def job_count(config: Config) -> int:
    """Jobs per throughput run: ``config.jobs``, at most 2,000 in quick mode."""
    return min(config.jobs, 2_000) if config.quick else config.jobs


def single_count(config: Config) -> int:
    """Single enqueues to time: enough for a stable rate, few enough to stay quick."""
    return 200 if config.quick else 1_000


def libpq_url(url: str) -> str:
    """The URL without a SQLAlchemy ``+driver`` suffix, as libpq and asyncpg want it."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.split("+", 1)[0]))


@contextmanager
def scratch_database(config: Config, stem: str) -> Iterator[str]:
    """Create database ``<stem>_<pid>`` for one run, yield its URL and drop it afterwards."""
    admin = libpq_url(config.postgres_url)
    name = f"{stem}_{os.getpid()}"
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(drop)
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(drop)


class Monitor:
    """One autocommit connection for the driver's own short queries while workers run."""

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True)

    def value(self, query: str) -> Any:
        row = self.connection.execute(query.encode()).fetchone()
        return None if row is None else row[0]

    def execute(self, query: str) -> None:
        self.connection.execute(query.encode())

    def close(self) -> None:
        self.connection.close()


@dataclass
class Workers:
    """Worker processes started from a command line, as a user would run them in production."""

    commands: Sequence[Sequence[str]]
    env: dict[str, str]
    log_path: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _log: TextIO | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        for command in self.commands:
            self.processes.append(
                subprocess.Popen(
                    list(command), cwd=ROOT, env=self.env, stdout=self._log, stderr=self._log
                )
            )

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(
                    f"worker exited early with {process.returncode}: {self.log_tail(3)}"
                )

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM every worker (their graceful shutdown), then SIGKILL stragglers."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int) -> str:
        if self._log is not None:
            self._log.flush()
        try:
            return " | ".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return ""


@dataclass(frozen=True)
class Run:
    """One throughput run: ``concurrency=None`` leaves the library's own default."""

    handler: str
    processes: int
    concurrency: int | None
    footprint: bool = False


# The same grid for every peer: default and high concurrency, 1 and 2 processes, then the
# I/O-bound handler at high concurrency. Peak RSS comes from the 1-process high-concurrency run.
GRID = (
    Run("noop", 1, None),
    Run("noop", 1, HIGH_CONCURRENCY, footprint=True),
    Run("noop", 2, None),
    Run("noop", 2, HIGH_CONCURRENCY),
    Run("sleep10ms", 1, HIGH_CONCURRENCY),
)


@dataclass(frozen=True)
class Peer:
    """How to drive one library: its API calls, its worker command and its tables."""

    system: str
    database_stem: str
    dsn_env: str
    packages: tuple[str, ...]
    default_concurrency: int | None
    install: Callable[[str], Coroutine[Any, Any, None]]
    enqueue_single: Callable[[str, int], Coroutine[Any, Any, float]]
    enqueue_batch: Callable[[str, str, int], Coroutine[Any, Any, float]]
    single_api: str
    batch_api: str
    chunk: int
    worker: tuple[str, ...]
    worker_flags: Callable[[int | None], list[str]]
    reset_sql: str
    busy_sql: str
    window_sql: str
    succeeded_sql: str
    window: str


def measure(peer: Peer, config: Config) -> list[Result]:
    """Every figure for one peer, in a database made for this run and dropped after it."""
    jobs = job_count(config)
    results: list[Result] = []
    base: dict[str, Any] = {}
    batch_rates: list[float] = []
    with scratch_database(config, peer.database_stem) as dsn:
        asyncio.run(peer.install(dsn))
        monitor = Monitor(dsn)
        try:
            base = {"versions": _versions(peer, monitor)}
            singles = single_count(config)
            took = asyncio.run(peer.enqueue_single(dsn, singles))
            params = {**base, "jobs": singles, "api": peer.single_api}
            results.append(_result(peer, "enqueue", "single", singles / took, "jobs/s", params))
            monitor.execute(peer.reset_sql)
            env = worker_env({peer.dsn_env: dsn})
            for run in GRID:
                flags = peer.worker_flags(run.concurrency)
                params = {
                    **base,
                    "processes": run.processes,
                    "concurrency": peer.default_concurrency
                    if run.concurrency is None
                    else run.concurrency,
                    "default_concurrency": run.concurrency is None,
                    "handler": f"async {run.handler}",
                    "worker": " ".join(["python", *peer.worker[1:], *flags]),
                }
                try:
                    took = asyncio.run(peer.enqueue_batch(dsn, run.handler, jobs))
                    batch_rates.append(jobs / took)
                    results += _drain(peer, run, jobs, env, monitor, params, config)
                except (RuntimeError, TimeoutError) as error:
                    params["error"] = str(error)
                    results.append(
                        _result(peer, "throughput", run.handler, float("nan"), "jobs/s", params)
                    )
                finally:
                    monitor.execute(peer.reset_sql)
        finally:
            monitor.close()
    if batch_rates:
        spread = {"samples": len(batch_rates), "min": round(min(batch_rates), 1)}
        spread["max"] = round(max(batch_rates), 1)
        params = {**base, **spread, "jobs": jobs, "chunk": peer.chunk, "api": peer.batch_api}
        rate = statistics.median(batch_rates)
        results.insert(1, _result(peer, "enqueue", "batch", rate, "jobs/s", params))
    return results


def _drain(
    peer: Peer,
    run: Run,
    jobs: int,
    env: dict[str, str],
    monitor: Monitor,
    params: dict[str, Any],
    config: Config,
) -> list[Result]:
    """Start the workers on a full queue, wait until it is empty, read the window and RSS."""
    label = "default" if run.concurrency is None else str(run.concurrency)
    workers = Workers(
        [[*peer.worker, *peer.worker_flags(run.concurrency)]] * run.processes,
        env,
        Path(config.workdir) / "peers" / f"{peer.system}-{run.handler}-{run.processes}x{label}.log",
    )
    timeout = max(120.0, jobs / 50)
    started = time.perf_counter()
    workers.start()
    try:
        while monitor.value(peer.busy_sql):
            workers.check_alive()
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"jobs still pending after {timeout:.0f} s")
            time.sleep(POLL_S)
        wall = time.perf_counter() - started
        rss = peak_rss_mb(workers.processes[0].pid)
    finally:
        workers.stop()
    window = monitor.value(peer.window_sql)
    from_db = window is not None and float(window) > 0
    seconds = float(window) if from_db else wall
    figures = {
        **params,
        "jobs": jobs,
        "succeeded": int(monitor.value(peer.succeeded_sql)),
        "window": peer.window if from_db else "wall: workers started -> queue empty",
        "window_s": round(seconds, 3),
        "wall_s": round(wall, 3),
    }
    out = [_result(peer, "throughput", run.handler, jobs / seconds, "jobs/s", figures)]
    if run.footprint:
        keep = ("versions", "processes", "concurrency", "handler", "jobs")
        busy = {key: figures[key] for key in keep}
        out.append(_result(peer, "footprint", "peak_rss_busy", rss, "MiB", busy))
    return out


def _result(
    peer: Peer, scenario: str, metric: str, value: float, unit: str, params: dict[str, Any]
) -> Result:
    return Result(scenario, peer.system, "postgres", metric, value, unit, params)


def _versions(peer: Peer, monitor: Monitor) -> dict[str, str]:
    found = {package: version(package) for package in peer.packages}
    found["postgres"] = str(monitor.value("SHOW server_version"))
    return found


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    """The parent's environment, ``bench`` importable, plus the peer's own variables."""
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def main(run: Callable[[Config], list[Result]], description: str) -> int:
    """``python -m bench.peers.<peer> [--quick]``: print each result as a JSON line."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="2,000 jobs, fewer samples")
    parser.add_argument("--jobs", type=int, default=Config.jobs)
    parser.add_argument("--postgres-url", default=Config.postgres_url)
    options = parser.parse_args()
    config = Config(
        backends=("postgres",),
        jobs=options.jobs,
        quick=options.quick,
        postgres_url=options.postgres_url,
    )
    for result in run(config):
        print(json.dumps(result.to_json()), flush=True)
    return 0


PYTHON = sys.executable
