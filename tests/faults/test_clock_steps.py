"""A host's clock stepped mid-job never makes a live job run twice (DESIGN invariant 3).

Two real worker processes share the database; one runs under libfaketime, whose offset the test
changes while a job runs, as NTP or an operator would step that host's wall clock (its
monotonic clock is left alone, as a step leaves it).  Leases are written and compared on the
database server's clock (``runtime.timeline``), so a worker stepped back keeps renewing live
leases, and one stepped forward finds nothing of another's expired.  On SQLite every process
shares one host's clock, which is the time line there: the servers are where hosts differ.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rota import JobState, Rota
from tests.requirements import faketime, libfaketime, require, skipped_outside_ci
from tests.workers import Workers

STEP = 120
LEASE = 4.0
"""Longer than the other process tests' (2 s), so that a loaded CI machine's late heartbeats
cannot look like what this test looks for."""
RUN = 8.0
"""Seconds the job runs: two leases, half a dozen heartbeats after the step."""
SERVERS = pytest.mark.parametrize("db", ["mariadb", "postgres"], indirect=True)
pytestmark = skipped_outside_ci(faketime())


class SteppedClock:
    """The wall clock of the processes started with ``env``, stepped by writing its offset."""

    def __init__(self, directory: Path) -> None:
        require(faketime())
        self.path = directory / "faketime"
        self.step(0)
        self.env = {
            "LD_PRELOAD": libfaketime() or "",
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def step(self, seconds: int) -> None:
        partial = self.path.with_suffix(".tmp")
        partial.write_text(f"{seconds:+d}\n")
        os.replace(partial, self.path)


def run_once(control: Rota, workers: Workers, job_id: int, *alive: subprocess.Popen[bytes]) -> None:
    """The job succeeds at its first attempt, and no worker ever took its lease for expired."""
    done = lambda: control.job(job_id).state is JobState.SUCCEEDED  # noqa: E731
    workers.wait(done, *alive, timeout=RUN + 20)
    job = control.job(job_id)
    assert job.attempt == 1, job.errors
    assert job.errors == ()
    assert workers.mark(job_id, 2, "started") is None
    for process in alive:
        log = workers.log(process)
        assert "job.recovered" not in log and "job.lost" not in log, log


@pytest.mark.slow
@SERVERS
@pytest.mark.parametrize("step", [-STEP, STEP])
def test_the_worker_running_a_job_has_its_clock_stepped(
    control: Rota, workers: Workers, tmp_path: Path, step: int
) -> None:
    clock = SteppedClock(tmp_path)
    workers.env["ROTA_TEST_LEASE"] = str(LEASE)
    stepped = workers.start(env=clock.env)
    job_id = control.queue("long_first_attempt", RUN)
    workers.wait(lambda: workers.mark(job_id, 1, "started"), stepped, timeout=20)
    started = workers.mark(job_id, 1, "started")
    assert started is not None and started[1] == stepped.pid
    other = workers.start()

    clock.step(step)
    run_once(control, workers, job_id, stepped, other)
    finished = workers.mark(job_id, 1, "finished")
    assert finished is not None and finished[1] == stepped.pid


@pytest.mark.slow
@SERVERS
def test_another_worker_has_its_clock_stepped_forward_while_a_job_runs(
    control: Rota, workers: Workers, tmp_path: Path
) -> None:
    """Forward, the other worker would see the holder's live lease as expired; back, it would
    only see others' leases as longer-lived (the leases a worker stepped back writes are the
    first test's)."""
    workers.env["ROTA_TEST_LEASE"] = str(LEASE)
    holder = workers.start()
    job_id = control.queue("long_first_attempt", RUN)
    workers.wait(lambda: workers.mark(job_id, 1, "started"), holder, timeout=20)
    clock = SteppedClock(tmp_path)
    stepped = workers.start(env=clock.env)

    clock.step(STEP)
    run_once(control, workers, job_id, holder, stepped)
    quick = control.queue("succeed")
    workers.wait(lambda: control.job(quick).state is JobState.SUCCEEDED, stepped, timeout=10)
