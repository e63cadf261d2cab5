"""``python -m rota`` in a real process: output, exit codes and no password on screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rota import JobContext, Rota
from rota.testing import FakeClock
from tests.cli.test_inspect import PASSWORD, closed_port
from tests.conftest import START
from tests.helpers import sql_store

pytestmark = pytest.mark.slow


def rota_command(*arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "ROTA_DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "rota", *arguments],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )


def test_python_dash_m_rota(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/jobs.db"
    rota = Rota(url, clock=FakeClock(START))

    @rota.task
    def hello(ctx: JobContext, name: str) -> None: ...

    job_id = rota.queue(hello, "world")
    assert rota.drain().succeeded == 1
    sql_store(rota).engine.dispose()

    listing = rota_command("jobs", "--url", url, "--json")
    assert listing.returncode == 0, listing.stderr
    (job,) = json.loads(listing.stdout)
    assert (job["id"], job["task"], job["state"]) == (job_id, "hello", "succeeded")
    assert job["finished_at"] == START.isoformat()

    missing = rota_command("job", "999", "--url", url)
    assert missing.returncode == 1
    assert "JOB_NOT_FOUND: job 999 does not exist" in missing.stderr

    unreachable = f"postgresql://app:{PASSWORD}@127.0.0.1:{closed_port()}/orders"
    check = rota_command("check", "--url", unreachable)
    assert check.returncode == 2, "cannot check"
    assert "DATABASE_UNAVAILABLE" in check.stderr and "'orders'" in check.stderr
    assert PASSWORD not in check.stdout + check.stderr
