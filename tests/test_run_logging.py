"""``rota.run()`` in the application's own script logs as ``rota worker`` does: text on stderr by
default, one JSON object a line with ``log_format="json"``, no Alembic chatter at INFO; and an
application that configured logging itself keeps its configuration, rota adding no handler."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import wait_until

pytestmark = pytest.mark.slow

SCRIPT = """
import logging
import sys

from rota import Rota

url, mode = sys.argv[1], sys.argv[2]
if mode == "configured":
    logging.basicConfig(level=logging.INFO, format="app %(levelname)s %(name)s: %(message)s")
rota = Rota(url, log_format="json" if mode == "json" else "text", poll_interval=0.05)


@rota.task(cron="0 3 * * *")
def nightly() -> None: ...


logging.getLogger("app").info("starting")
rota.run(grace=1)
"""
TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) +[\w.]+: ")


def run_until_started(tmp_path: Path, mode: str) -> list[str]:
    """Run the script on a new SQLite database until it logs ``worker.started``, stop it with
    SIGTERM, and return its stderr's lines."""
    script, stderr = tmp_path / "app.py", tmp_path / "stderr"
    script.write_text(SCRIPT)
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, str(script), f"sqlite:///{tmp_path}/jobs.db", mode],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_until(
                lambda: "worker.started" in stderr.read_text() or process.poll() is not None,
                timeout=30,
            )
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, stderr.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    lines = stderr.read_text().splitlines()
    assert any("worker.started" in line for line in lines), lines
    assert not [line for line in lines if "alembic" in line or "Context impl" in line], lines
    return lines


def test_run_logs_text_on_stderr_by_default(tmp_path: Path) -> None:
    lines = run_until_started(tmp_path, "text")
    assert all(TEXT_LINE.match(line) for line in lines), lines
    assert any("worker.stopped" in line for line in lines), lines


def test_run_logs_json_lines_with_log_format_json(tmp_path: Path) -> None:
    records = [json.loads(line) for line in run_until_started(tmp_path, "json")]
    events = [record["event"] for record in records if "event" in record]
    assert events[0] == "worker.started" and events[-1] == "worker.stopped", records
    assert all({"ts", "level", "logger"} <= record.keys() for record in records), records


def test_run_adds_no_handler_to_the_applications_own_logging(tmp_path: Path) -> None:
    lines = run_until_started(tmp_path, "configured")
    assert lines[0] == "app INFO app: starting"
    assert all(line.startswith("app ") for line in lines), lines
    assert len([line for line in lines if "worker.started" in line]) == 1, "one handler"
