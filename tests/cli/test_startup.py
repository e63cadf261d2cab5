"""A ``rota worker`` stopped while it is still starting: a SIGTERM (a deploy, ``systemctl stop``)
during the application's import is a clean stop, exit code 0, at once, and so is a supervisor's
stop of children not yet started."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota import Rota
from tests.cli.processes import ROOT, Running, running
from tests.helpers import migrated, wait_until

pytestmark = pytest.mark.slow

APP = "tests.apps.slow_app:app"
IMPORT_SECONDS = 60  # far longer than any stop below may take: the stop cuts the import short
STOPPED = "stopped by {} before the worker started"


@pytest.fixture
def control(tmp_path: Path) -> Iterator[Rota]:
    with migrated(f"sqlite:///{tmp_path}/jobs.db", "slow_") as rota:
        yield rota


def env(control: Rota, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "ROTA_TEST_URL": control.config.url,
        "ROTA_TEST_PREFIX": "slow_",
        "ROTA_TEST_DIR": str(tmp_path),
        "ROTA_TEST_IMPORT_SECONDS": str(IMPORT_SECONDS),
        **extra,
    }


def importing(tmp_path: Path) -> int:
    """How many processes are inside the app's slow import."""
    return len(list(tmp_path.glob("slow_app.*")))


def stop_with(worker: Running, signum: int) -> tuple[int, float]:
    started = time.monotonic()
    worker.process.send_signal(signum)
    return worker.process.wait(timeout=IMPORT_SECONDS / 2), time.monotonic() - started


def test_supervisor_stopped_while_its_workers_import_exits_0(control: Rota, tmp_path: Path) -> None:
    with running(
        "worker",
        APP,
        "--processes",
        "2",
        "--grace",
        "5",
        logs=tmp_path / "w",
        env=env(control, tmp_path),
    ) as supervisor:
        wait_until(lambda: supervisor.alive() and importing(tmp_path) == 2, timeout=30)
        code, took = stop_with(supervisor, signal.SIGTERM)
    output = supervisor.output()
    assert code == 0, output
    assert output.count(STOPPED.format("SIGTERM")) == 2, output
    assert "worker.started" not in output and "started worker process" in output, output
    assert took < 5 + 10, output  # neither waited for the import nor killed after the grace


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_worker_stopped_while_importing_the_app_exits_0(
    control: Rota, tmp_path: Path, signum: signal.Signals
) -> None:
    with running(
        "worker", APP, logs=tmp_path / "w", env=env(control, tmp_path, ROTA_TEST_SLOW_IMPORT="1")
    ) as worker:
        wait_until(lambda: worker.alive() and importing(tmp_path) == 1, timeout=30)
        code, took = stop_with(worker, signum)
    output = worker.output()
    assert code == 0, output
    assert output.count(STOPPED.format(signum.name)) == 1, output
    assert "Traceback" not in output and "Aborted" not in output, output
    assert took < 10, output


SUPERVISED = textwrap.dedent(
    """
    import logging, sys
    from rota.runtime.host.supervisor import supervise
    logging.basicConfig(level=logging.INFO)
    sys.exit(supervise([sys.executable, "-c", sys.argv[1]], 2, grace=1, poll=0.05))
    """
)


@pytest.mark.parametrize(
    ("child", "expected"),
    [
        # No handler at all: the SIGTERM itself ends the child, as it ends a ``rota worker``
        # still starting its interpreter.  It stopped as asked.
        ("import time; print('ready', flush=True); time.sleep(60)", 0),
        # A child that fails its stop is still a failure.
        (
            "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)",
            1,
        ),
    ],
    ids=["ended-by-the-signal", "exits-1"],
)
def test_supervisor_counts_a_child_ended_by_its_sigterm_as_stopped(
    tmp_path: Path, child: str, expected: int
) -> None:
    log = tmp_path / "supervisor.log"
    with log.open("wb") as out:
        supervisor = subprocess.Popen(
            [sys.executable, "-c", SUPERVISED, child], cwd=ROOT, stdout=out, stderr=out
        )
        try:
            wait_until(lambda: log.read_text().count("ready") == 2, timeout=30)
            supervisor.send_signal(signal.SIGTERM)
            assert supervisor.wait(timeout=30) == expected, log.read_text()
        finally:
            if supervisor.poll() is None:
                supervisor.kill()


def test_demo_stopped_while_queueing_its_first_jobs_exits_0(tmp_path: Path) -> None:
    """The demo queues its start-up jobs before its worker starts; here on a server that takes
    the connection and never answers, so the stop comes while it waits on it."""
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    url = f"mysql://root@127.0.0.1:{port}/test?connect_timeout=60"
    try:
        with running("demo", "--url", url, logs=tmp_path / "d") as demo:
            silent.settimeout(30)
            connection, _ = silent.accept()
            code, took = stop_with(demo, signal.SIGTERM)
            connection.close()
    finally:
        silent.close()
    output = demo.output()
    assert code == 0, output
    assert STOPPED.format("SIGTERM") in output, output
    assert "Traceback" not in output, output
    assert took < 10, output
