"""``python -m rota ...`` as a live process: started as a user starts it, its output kept in
files (a pipe nobody reads could block it), stopped with SIGTERM, killed if a test fails."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def output(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")

    def alive(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"exited with {self.process.returncode}:\n{self.output()}")
        return True

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, as a service manager stops it; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)


@contextlib.contextmanager
def running(
    *arguments: str, logs: Path, cwd: Path = ROOT, env: Mapping[str, str] | None = None
) -> Iterator[Running]:
    environment = {key: value for key, value in os.environ.items() if key != "ROTA_DATABASE_URL"}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    environment.update(env or {})
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "stdout").open("wb") as out, (logs / "stderr").open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "rota", *arguments],
            cwd=cwd,
            env=environment,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        try:
            yield Running(process, logs / "stdout", logs / "stderr")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
