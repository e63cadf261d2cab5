"""The failover workload every topology of ``scripts/ha/run`` runs, as a library and a CLI.

One run: migrate; start ``workers`` ``rota worker`` processes (``ha_app.py``: a ``record`` job
and a ``* * * * *`` cron task ``tick``); queue ``jobs`` jobs from a producer thread at a steady
rate for ``produce_seconds``, counting those whose ``queue_many`` returned (acknowledged); once
``kill_after`` of them are queued, ``kill_into_tick`` seconds after the next tick started to run
(its handler takes ``tick_work`` s: the kill lands while a tick is in flight, as well as jobs),
call the topology's ``fail`` (kill the writer, promote, repoint); keep producing, then wait
until every job is final, at least ``after_kill`` seconds after the kill so that a tick falls
after it; stop the workers and judge the outcome (``outcome.py``) from the marks and from the
final writer.

Why a producer during the failover rather than 20,000 jobs queued first: jobs queued long
before the kill have reached every replica, so only jobs acknowledged in the last moments
before it can be lost, and only a run that queues across the kill measures them. Why real
minutes for cron: the workers are real processes on the real clock, so ticks are counted over
the run's minutes (expected: every minute boundary between the start and the end), about three.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any

from ha_app import make
from outcome import Outcome, Run, judge, read_marks
from table import render

from common import wait_for
from rota import Enqueue, JobState, Rota

HERE = Path(__file__).resolve().parent
APP = HERE / "ha_app.py"
ROTA_COMMAND = ("-c", "from rota.cli import main; main()")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
UNFINISHED = (JobState.PENDING, JobState.PAUSED, JobState.RUNNING)


@dataclass(frozen=True)
class Topology:
    """A running setup: where to write, how to fail it, where to read afterwards."""

    name: str
    url: str
    """The one URL the producer and the workers use (a forwarder, haproxy, a multi-host URL)."""
    fail: Callable[[], float] | None = None
    """Kill the writer and recover (promote, repoint); returns the wall-clock time of the kill.
    ``None`` runs the workload without a failure."""
    final_url: str | None = None
    """Where to read the outcome, if not ``url``."""
    notes: dict[str, Any] = field(default_factory=dict)
    worker_urls: Sequence[str] = ()
    """One URL per worker, in turn (multi-writer Galera: each on its own node); else ``url``."""


@dataclass(frozen=True)
class Settings:
    jobs: int = 20_000
    workers: int = 4
    concurrency: int = 10
    produce_seconds: float = 120.0
    batch: int = 10
    kill_after: float = 0.4
    kill_into_tick: float = 0.5
    after_kill: float = 70.0
    timeout: float = 420.0
    work: float = 0.05
    """Seconds each job's handler sleeps."""
    tick_work: float = 2.0
    """Seconds each tick's handler sleeps."""


class Producer(threading.Thread):
    """Queues ``Settings.jobs`` jobs in batches at a steady rate; a failed call is not
    repeated (its jobs are unacknowledged, though some may have been written)."""

    def __init__(self, app: Rota, settings: Settings) -> None:
        super().__init__(name="producer", daemon=True)
        self.app = app
        self.settings = settings
        self.acknowledged: dict[int, int] = {}
        self.sent = 0
        self.errors: Counter[str] = Counter()
        self.stopping = threading.Event()

    def run(self) -> None:
        rate = self.settings.jobs / self.settings.produce_seconds
        began = time.monotonic()
        while self.sent < self.settings.jobs and not self.stopping.is_set():
            numbers = range(self.sent, min(self.sent + self.settings.batch, self.settings.jobs))
            self.stopping.wait(max(0.0, began + self.sent / rate - time.monotonic()))
            try:
                ids = self.app.queue_many(Enqueue("record", n) for n in numbers)
            except Exception as error:  # any failure of a failover: count it, carry on
                self.errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1
                time.sleep(0.1)
            else:
                self.acknowledged.update(zip(numbers, ids, strict=True))
            self.sent = numbers.stop


class Workers:
    """``rota worker`` processes on the topology's URL, their output in ``directory``."""

    def __init__(
        self, urls: Sequence[str], prefix: str, directory: Path, settings: Settings
    ) -> None:
        self.urls = urls
        self.env = {
            **os.environ,
            "ROTA_HA_PREFIX": prefix,
            "ROTA_HA_DIR": str(directory),
            "ROTA_HA_CONCURRENCY": str(settings.concurrency),
            "ROTA_HA_WORK": str(settings.work),
            "ROTA_HA_TICK_WORK": str(settings.tick_work),
        }
        self.directory = directory
        self.processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self, count: int) -> None:
        for index in range(count):
            log = (self.directory / f"worker-{index}.log").open("wb")
            command = [sys.executable, *ROTA_COMMAND, "worker", f"{APP}:app", "--grace", "2"]
            env = {**self.env, "ROTA_HA_URL": self.urls[index % len(self.urls)]}
            process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory
            )
            self.processes.append((process, log))

    def exited(self) -> dict[int, int]:
        return {p.pid: p.returncode for p, _ in self.processes if p.poll() is not None}

    def stop(self) -> dict[int, int]:
        """SIGTERM, then SIGKILL for any still running after ``STOP_TIMEOUT``; exit codes."""
        early = self.exited()
        for process, _ in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process, log in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
        return early


def unfinished(app: Rota) -> int | None:
    """Pending, paused or running ``record`` jobs on the writer; ``None`` if it cannot say."""
    try:
        states = app.counts().by_task.get("record", {})
    except Exception:
        return None
    return sum(states.get(state.value, 0) for state in UNFINISHED)


def alive(app: Rota) -> int:
    """Workers registered on the writer that heartbeated within the last 30 s."""
    return len(app.store.workers(datetime.now(timezone.utc) - timedelta(seconds=30)))


def until_kill(producer: Producer, settings: Settings, directory: Path) -> None:
    """Until ``kill_after`` of the jobs are queued and a tick has run for ``kill_into_tick``."""
    wait_for(lambda: producer.sent >= settings.kill_after * settings.jobs, 600, "producing")
    started = len([m for m in read_marks(directory) if m.kind == "tick"])
    wait_for(
        lambda: len([m for m in read_marks(directory) if m.kind == "tick"]) > started,
        90,
        "the next tick",
    )
    time.sleep(settings.kill_into_tick)


def run(topology: Topology, settings: Settings, directory: Path | None = None) -> Outcome:
    """Run the workload on ``topology`` and judge it; never raises for a failed run, whose
    ``Outcome.error`` says what went wrong."""
    slug = "-".join(re.findall(r"[a-z0-9]+", topology.name.lower()))
    directory = directory or Path(tempfile.mkdtemp(prefix=f"rota-ha-{slug}-"))
    prefix = f"ha{uuid.uuid4().hex[:8]}_"
    app = make(topology.url, prefix, directory)
    app.counts()  # connects and migrates once, before the workers race to
    workers = Workers(topology.worker_urls or [topology.url], prefix, directory, settings)
    producer = Producer(app, settings)
    killed_at = recovered_at = None
    notes: dict[str, Any] = {"prefix": prefix, "directory": str(directory)}
    error = None
    try:
        workers.start(settings.workers)
        wait_for(lambda: alive(app) >= settings.workers, START_TIMEOUT, "workers registered")
        ticks_from = time.time()
        producer.start()
        if topology.fail is not None:
            until_kill(producer, settings, directory)
            killed_at = topology.fail()
            recovered_at = time.time()
        producer.join()
        settle = (killed_at or time.time()) + (settings.after_kill if killed_at else 0)
        deadline = time.monotonic() + settings.timeout
        while time.monotonic() < deadline and (unfinished(app) != 0 or time.time() < settle):
            time.sleep(0.5)
        if unfinished(app) != 0:
            error = f"jobs still unfinished after {settings.timeout:.0f} s"
    except Exception as failure:
        error = f"{type(failure).__name__}: {failure}"
        ticks_from = time.time()
    finally:
        producer.stopping.set()
        ended = time.time()
        notes["workers_exited_early"] = workers.stop()
        notes["enqueue_errors"] = dict(producer.errors)
        app.store.dispose()
    final = make(topology.final_url or topology.url, prefix, directory)
    try:
        final.counts()  # connects (and would migrate a writer that lacks the tables)
        jobs = final.store.jobs(limit=None)
    except Exception as failure:
        jobs, error = [], error or f"reading the outcome: {type(failure).__name__}: {failure}"
    finally:
        final.store.dispose()
    acknowledged = producer.acknowledged
    notes = {**topology.notes, **notes}  # the topology's, written during its failover too
    observed = Run(topology.name, acknowledged, ticks_from, ended, killed_at, recovered_at, notes)
    outcome = judge(observed, read_marks(directory), jobs)
    outcome.error = error
    return outcome


def shell_failure(command: str) -> Callable[[], float]:
    """A ``fail`` that runs ``command`` in a shell (the CLI's ``--fail``)."""

    def fail() -> float:
        killed = time.time()
        subprocess.run(command, shell=True, check=False)
        return killed

    return fail


def settings_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``Settings``, shared by this CLI and ``run``'s."""
    defaults = Settings()
    for name, value in vars(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")


def settings_from(options: argparse.Namespace) -> Settings:
    return Settings(**{name: getattr(options, name) for name in vars(Settings())})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the writer endpoint")
    parser.add_argument("--name", default="custom")
    parser.add_argument("--fail", help="a shell command that kills the writer and recovers")
    settings_arguments(parser)
    options = parser.parse_args()
    failure = shell_failure(options.fail) if options.fail else None
    outcome = run(Topology(options.name, options.url, failure), settings_from(options))
    print(render([outcome]))
    if options.json:
        options.json.write_text(json.dumps([outcome.as_dict()], indent=2))


if __name__ == "__main__":
    main()
