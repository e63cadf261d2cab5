"""``rota worker`` processes for tests, started as a user starts them, with their logs kept.

Each test app (tests/apps/) reads its database, table prefix, mark directory, lease and poll
interval from ``ROTA_TEST_*`` variables, which ``Workers.start`` sets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from rota import Rota
from rota.core.model import WorkerInfo
from tests.conftest import Database
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parent.parent
LEASE = 2.0
POLL = 0.2
GRACE = 2.0
START_TIMEOUT = 20.0
EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
# What the ``rota`` console script runs.
ROTA_COMMAND = ("-c", "from rota.cli import main; main()")


class Workers:
    """Starts ``rota worker`` processes on the test's database; kills leftovers at teardown."""

    def __init__(
        self,
        db: Database,
        control: Rota,
        tmp_path: Path,
        app: str = "tests.apps.process_app:app",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.db = db
        self.app = app
        self.env = dict(env or {})
        self.control = control
        self.marks = tmp_path / "marks"
        self.marks.mkdir()
        self.logs = tmp_path
        self.started: list[tuple[subprocess.Popen[bytes], Path, IO[bytes]]] = []

    def start(
        self,
        url: str | None = None,
        *,
        registered: bool = True,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start one worker on ``url`` (default: the test's database) and, unless told not
        to, return once it has registered itself in ``<prefix>workers``.

        ``command`` replaces ``rota worker APP --grace GRACE`` (the arguments after python);
        ``env`` adds to the workers' environment for this one."""
        environment = {
            **os.environ,
            "ROTA_TEST_URL": url or self.db.url,
            "ROTA_TEST_PREFIX": self.db.prefix,
            "ROTA_TEST_DIR": str(self.marks),
            "ROTA_TEST_LEASE": str(LEASE),
            "ROTA_TEST_POLL": str(POLL),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **self.env,
            **(env or {}),
        }
        arguments = command or [*ROTA_COMMAND, "worker", self.app, "--grace", str(GRACE)]
        log_path = self.logs / f"worker-{len(self.started)}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            [sys.executable, *arguments],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.started.append((process, log_path, log))
        if registered:
            self.wait(lambda: self.registered(process), process, timeout=START_TIMEOUT)
        return process

    def registered(self, process: subprocess.Popen[bytes]) -> bool:
        return self.registration(process) is not None

    def log(self, process: subprocess.Popen[bytes]) -> str:
        for candidate, path, _ in self.started:
            if candidate is process:
                return path.read_text(errors="replace")
        return ""

    def wait(
        self,
        check: Callable[[], object],
        *alive: subprocess.Popen[bytes],
        timeout: float = 10.0,
    ) -> None:
        """``wait_until(check)``, failing at once (with its log) if a worker in ``alive`` dies."""

        def alive_and(check: Callable[[], object]) -> object:
            for process in alive:
                if process.poll() is not None:
                    raise AssertionError(
                        f"worker {process.pid} exited with {process.returncode} while waiting "
                        f"for {check}; its log:\n{self.log(process)}"
                    )
            return check()

        wait_until(lambda: alive_and(check), timeout=timeout)

    def registration(self, process: subprocess.Popen[bytes]) -> WorkerInfo | None:
        for info in self.control.store.cluster.workers(EPOCH):
            if info.pid == process.pid:
                return info
        return None

    def mark(self, job_id: int, attempt: int, event: str) -> tuple[float, int] | None:
        """``(wall-clock time, pid)`` a handler recorded for this attempt, or ``None``."""
        path = self.marks / f"{job_id}.{attempt}.{event}"
        if not path.exists():
            return None
        at, pid = path.read_text().split()
        return float(at), int(pid)

    def stop_all(self) -> None:
        """Kill every worker still running and print its log; a second call does nothing."""
        stopping, self.started = self.started, []
        for process, path, log in stopping:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            log.close()
            print(f"--- worker {process.pid} (exit {process.returncode}) ---")
            print(path.read_text(errors="replace"))
