"""A deploy's SIGTERM never makes a job run twice at once (DESIGN invariant 3).

A sync handler that ignores its interruption cannot be stopped in-process: its job is not given
back at shutdown; the stopping process exits after the grace period, and a second replica runs
the job only once the lease has expired, after that process (and so the first run) has gone.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from rota import JobState, Rota
from rota.errors import ErrorCode
from tests.apps.isolated_app import alive
from tests.faults.test_isolation import marks
from tests.workers import LEASE, ROTA_COMMAND, Workers

APP = "tests.apps.process_app:app"
GRACE = 3.0
EXIT_MARGIN = 2.0
FIRST_RUN = 60.0
SERVERS = pytest.mark.parametrize("db", ["mariadb", "postgres"], indirect=True)
"""Where two replicas claim with SKIP LOCKED, as in production."""


def stop_within_grace(stopping: subprocess.Popen[bytes], workers: Workers) -> float:
    """SIGTERM ``stopping``: it must exit cleanly within the grace and ``EXIT_MARGIN``; the
    time it had exited by."""
    signalled = time.time()
    stopping.send_signal(signal.SIGTERM)
    code = stopping.wait(timeout=GRACE + EXIT_MARGIN + 5)
    exited = time.time()
    print(f"SIGTERM -> exit {code} after {exited - signalled:.2f} s (grace {GRACE} s)")
    assert code == 0, workers.log(stopping)
    assert exited - signalled <= GRACE + EXIT_MARGIN
    return exited


@pytest.mark.slow
@SERVERS
def test_sigterm_during_a_job_that_ignores_cancellation_never_overlaps_its_rerun(
    control: Rota, workers: Workers
) -> None:
    command = [*ROTA_COMMAND, "worker", APP, "--grace", str(GRACE)]
    stopping = workers.start(command=command)
    job_id = control.queue("long_first_attempt", FIRST_RUN)
    workers.wait(lambda: workers.mark(job_id, 1, "started"), stopping, timeout=20)
    replica = workers.start(command=command)

    exited = stop_within_grace(stopping, workers)
    assert "did not stop when interrupted" in workers.log(stopping)
    assert "job.released" not in workers.log(stopping), "abandoned, so not released"

    workers.wait(lambda: control.job(job_id).state is JobState.SUCCEEDED, replica, timeout=30)
    first, rerun = workers.mark(job_id, 1, "started"), workers.mark(job_id, 2, "started")
    assert first is not None and rerun is not None
    assert first[1] == stopping.pid and rerun[1] == replica.pid
    assert workers.mark(job_id, 1, "finished") is None, "the first run ended with its process"
    print(f"rerun started {rerun[0] - exited:.2f} s after the first run's process exited")
    assert rerun[0] > exited, "the rerun started only after the first run had gone"
    job = control.job(job_id)
    assert [error.code for error in job.errors] == [ErrorCode.LEASE_EXPIRED]
    assert rerun[0] - exited <= LEASE + 3, "recovered within a lease and a few polls"


@pytest.mark.slow
@SERVERS
def test_sigterm_during_an_isolated_job_kills_its_child_and_the_rerun_never_overlaps(
    control: Rota, workers: Workers, tmp_path: Path
) -> None:
    """With ``isolation="process"`` the handler can be stopped: at the end of the grace its
    child gets SIGTERM (ignored here), then SIGKILL; once it is dead the job goes back to
    pending, and the second replica runs it, while no process of the first run is alive."""
    command = [*ROTA_COMMAND, "worker", APP, "--grace", str(GRACE)]
    stopping = workers.start(command=command)
    path = tmp_path / "isolated-marks"
    job_id = control.queue("stubborn", str(path), FIRST_RUN)
    workers.wait(lambda: marks(path), stopping, timeout=30)
    replica = workers.start(command=command)

    stop_within_grace(stopping, workers)
    assert "did not stop when interrupted" not in workers.log(stopping), "it was stopped"

    workers.wait(lambda: control.job(job_id).state is JobState.SUCCEEDED, replica, timeout=30)
    first, *rerun = marks(path)
    first_child = first[2]
    assert not alive(first_child), "the first run's child was killed"
    assert [what for *_, what in rerun] == ["start", "earlier alive=False", "end"]
    assert rerun[0][2] not in (first_child, stopping.pid, replica.pid), "in a child of its own"
    job = control.job(job_id)
    assert job.errors == (), "released at shutdown, not failed: no attempt spent"
    log = workers.log(stopping)
    assert log.index("killing it") < log.index("job.released"), "released once the child died"
