"""The demo service, run as a user runs it: jobs retry and succeed, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "command",
    [["-m", "examples.demo"], ["-m", "rota", "demo"]],
    ids=["python-m-examples.demo", "rota-demo"],
)
def test_demo_runs_jobs_and_stops_gracefully(tmp_path: Path, command: list[str]) -> None:
    env = {**os.environ, "DEMO_DATABASE_URL": f"sqlite:///{tmp_path / 'demo.db'}"}
    run_demo([sys.executable, *command], cwd=tmp_path if "rota" in command else ROOT, env=env)


def run_demo(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Start the demo, wait for a retried and a succeeded job, Ctrl-C it, check a clean exit."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = Output(process)
    try:
        output.read_until({"job.retrying", "job.succeeded"}, START_TIMEOUT)
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=STOP_TIMEOUT)
        output.read_to_end(STOP_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        output.close()
    assert returncode == 0, output.text
    assert any("rota.events" in line and "worker.stopped" in line for line in output.lines), (
        output.text
    )
    assert "Traceback" not in output.text, output.text


class Output:
    """A child's output read by a thread into a queue, so that every read has a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self.lines: list[str] = []
        self._stream = process.stdout
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, name="demo-output", daemon=True)
        self._thread.start()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def read_until(self, wanted: Iterable[str], timeout: float) -> None:
        """Collect lines until each of ``wanted`` has appeared in one; fail at the deadline."""
        missing = set(wanted)
        deadline = time.monotonic() + timeout
        while missing:
            line = self._next(deadline)
            if line is None:
                pytest.fail(f"the demo exited before logging {sorted(missing)}:\n{self.text}")
            missing = {event for event in missing if event not in line}

    def read_to_end(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._next(deadline) is not None:
            pass

    def close(self) -> None:
        """Called once the process is gone, so the pump is at end of file or nearly."""
        self._thread.join(timeout=STOP_TIMEOUT)
        self._stream.close()

    def _pump(self) -> None:
        for line in self._stream:
            self._queue.put(line)
        self._queue.put(None)

    def _next(self, deadline: float) -> str | None:
        try:
            line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            pytest.fail(f"deadline passed; the demo's output so far:\n{self.text}")
        if line is not None:
            self.lines.append(line)
        return line
