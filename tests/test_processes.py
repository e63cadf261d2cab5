"""Real worker processes, started as a user starts them: ``rota worker tests.apps.process_app:app``.

What only separate processes can show: a job whose worker is killed with SIGKILL is re-run by
another worker within lease + one poll (invariant 2); SIGTERM stops a worker gracefully, giving
unfinished attempts back; a handler that exits, raises or hangs never takes its worker down
(invariant 6); workers register themselves and keep a heartbeat.

The handlers (tests/apps/process_app.py) leave a mark file per attempt, holding the wall-clock
time and the pid of the process that ran it.  Every wait polls observable state with a deadline.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rota import Enqueue, Job, JobState, Rota
from tests.conftest import Database
from tests.workers import EPOCH, GRACE, LEASE, POLL, ROTA_COMMAND, START_TIMEOUT, Workers

pytestmark = pytest.mark.slow

# Scheduling slack for the rescuing worker: its DB round trips and thread hand-offs.
RESCUE_MARGIN = 0.5
# Time allowed for a process to exit after its grace: final report, unregister, interpreter exit.
EXIT_MARGIN = 3.0


def _final(control: Rota, job_id: int) -> Callable[[], bool]:
    def is_final() -> bool:
        return control.job(job_id).state.is_final

    return is_final


def _timestamp(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def _assert_released(job: Job) -> None:
    """Given back by a graceful stop: pending again, the attempt not spent, nobody holding it."""
    assert job.state is JobState.PENDING, job
    assert job.attempt == 0, job
    assert job.lease_owner is None, job
    assert job.errors == (), job


def _assert_abandoned(job: Job) -> None:
    """Its handler ignored the interruption, so it may still have been running when the
    process left: not released, the lease left to expire (invariant 3)."""
    assert job.state is JobState.RUNNING, job
    assert job.attempt == 1 and job.lease_owner is not None, job


def test_killed_worker_job_is_rerun_within_lease(
    db: Database, control: Rota, workers: Workers
) -> None:
    first = workers.start()
    job_id = control.queue("block_on_first_attempt")
    workers.wait(lambda: workers.mark(job_id, 1, "started"), first)
    held = control.job(job_id)
    assert held.state is JobState.RUNNING
    assert held.lease_owner is not None
    assert f":{first.pid}:" in held.lease_owner

    second = workers.start()  # already polling when the first one dies: no start-up counted
    killed_at = time.time()
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=5) == -signal.SIGKILL

    workers.wait(_final(control, job_id), second, timeout=LEASE + POLL + 10)
    job = control.job(job_id)
    assert job.state is JobState.SUCCEEDED, job
    assert job.attempt == 2
    assert [(error.attempt, error.code) for error in job.errors] == [(1, "LEASE_EXPIRED")]
    first_run, second_run = workers.mark(job_id, 1, "started"), workers.mark(job_id, 2, "started")
    assert first_run is not None
    assert first_run[1] == first.pid
    assert second_run is not None
    assert second_run[1] == second.pid
    assert workers.mark(job_id, 2, "finished") is not None

    rescued_after = _timestamp(job.errors[0].at) - killed_at
    rerun_after = second_run[0] - killed_at
    print(
        f"[{db.backend}] SIGKILL -> rescued to pending {rescued_after:.3f} s, "
        f"-> attempt 2 started {rerun_after:.3f} s (lease {LEASE} s, poll {POLL} s)"
    )
    # Not before the lease could have run out (renewed every LEASE / 3), and within lease + poll.
    assert rescued_after >= LEASE * 2 / 3 - RESCUE_MARGIN
    assert rescued_after <= LEASE + POLL + RESCUE_MARGIN
    assert rerun_after <= LEASE + POLL + RESCUE_MARGIN


def test_sigterm_finishes_short_jobs_and_gives_long_ones_back(
    db: Database, control: Rota, workers: Workers
) -> None:
    worker = workers.start()
    short = control.queue("work_for", 1.0)
    # Far longer than the grace: one waits on ctx.cancelled, one is an async handler (cancelled),
    # one is a sync handler that ignores ctx.cancelled (its thread cannot be stopped).
    longs = {
        "wait_for_cancel": control.queue("wait_for_cancel", 60 * GRACE),
        "async_sleep": control.queue("async_sleep", 60 * GRACE, queue="slow"),
        "sleep_ignoring_cancel": control.queue("sleep_ignoring_cancel", 60 * GRACE),
    }
    workers.wait(
        lambda: all(workers.mark(job_id, 1, "started") for job_id in [short, *longs.values()]),
        worker,
    )

    signalled = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    try:
        code = worker.wait(timeout=GRACE + EXIT_MARGIN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"worker still running {GRACE + EXIT_MARGIN} s after SIGTERM (grace {GRACE})")
    stopped_after = time.monotonic() - signalled
    print(f"[{db.backend}] SIGTERM -> exit {code} in {stopped_after:.3f} s (grace {GRACE} s)")
    assert code == 0

    assert control.job(short).state is JobState.SUCCEEDED
    assert workers.mark(short, 1, "finished") is not None
    ignoring = longs.pop("sleep_ignoring_cancel")
    for name, job_id in longs.items():
        _assert_released(control.job(job_id))
        assert workers.mark(job_id, 1, "finished") is None, name
    _assert_abandoned(control.job(ignoring))
    assert f"did not stop when interrupted (jobs {ignoring})" in workers.log(worker)


LONG_GRACE = 60.0
LONG_JOB = 10 * LONG_GRACE
# How long a first signal must leave the worker running (its jobs well inside the grace).
STILL_RUNNING = 1.5
APP = "tests.apps.process_app:app"
ENTRIES = {
    "rota-worker": [*ROTA_COMMAND, "worker", APP, "--grace", str(LONG_GRACE)],
    "rota.run": ["-c", f"from tests.apps.process_app import app; app.run(grace={LONG_GRACE})"],
    "supervisor": [*ROTA_COMMAND, "worker", APP, "--grace", str(LONG_GRACE), "--processes", "1"],
}


SECOND_SIGNALS = [
    *((entry, signal.SIGTERM) for entry in ENTRIES),
    ("rota-worker", signal.SIGINT),
    ("rota.run", signal.SIGINT),
]


# Each entry and signal on SQLite; on the servers, which differ only in the writes (the same for
# every entry), rota worker and SIGTERM.
@pytest.mark.parametrize(
    ("db", "entry", "sig"),
    [
        *(("sqlite", entry, sig) for entry, sig in SECOND_SIGNALS),
        ("mariadb", "rota-worker", signal.SIGTERM),
        ("postgres", "rota-worker", signal.SIGTERM),
    ],
    indirect=["db"],
)
def test_a_second_signal_skips_the_rest_of_the_grace(
    db: Database, control: Rota, workers: Workers, entry: str, sig: signal.Signals
) -> None:
    """The first SIGTERM (or Ctrl-C's SIGINT) waits for running jobs, the second interrupts them
    as the end of the grace would: what provably stopped is released, and the process exits at
    once."""
    worker = workers.start(command=ENTRIES[entry], registered=False)
    stoppable = {
        "wait_for_cancel": control.queue("wait_for_cancel", LONG_JOB),
        "async_sleep": control.queue("async_sleep", LONG_JOB, queue="slow"),
    }
    # Handler threads are daemons: a thread that ignores ctx.cancelled holds up no exit.
    ignoring = [control.queue("sleep_ignoring_cancel", LONG_JOB)]
    ids = [*stoppable.values(), *ignoring]
    workers.wait(
        lambda: all(workers.mark(job_id, 1, "started") for job_id in ids),
        worker,
        timeout=START_TIMEOUT,
    )

    worker.send_signal(sig)
    if entry != "rota.run":  # rota.run() leaves logging to the application
        workers.wait(lambda: "send the signal again to stop now" in workers.log(worker), worker)
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(timeout=STILL_RUNNING)
    assert all(control.job(job_id).state is JobState.RUNNING for job_id in ids)

    signalled = time.monotonic()
    worker.send_signal(sig)
    try:
        code = worker.wait(timeout=EXIT_MARGIN)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"still running {EXIT_MARGIN} s after a second {sig.name}:\n{workers.log(worker)}"
        )
    stopped_after = time.monotonic() - signalled
    print(f"[{db.backend}/{entry}] second {sig.name} -> exit {code} in {stopped_after:.3f} s")
    assert code == 0, workers.log(worker)
    for name, job_id in stoppable.items():
        _assert_released(control.job(job_id))
        assert workers.mark(job_id, 1, "finished") is None, name
    for job_id in ignoring:
        assert workers.mark(job_id, 1, "finished") is None
        _assert_abandoned(control.job(job_id))


def test_sigterm_after_sync_jobs_finished_exits_without_abandoning_threads(
    db: Database, control: Rota, tmp_path: Path
) -> None:
    """Fifty idle handler threads take a moment to end after their pool shuts down; that is
    no reason to warn of abandoned handlers, nor to skip the interpreter's exit handlers."""
    workers = Workers(db, control, tmp_path, env={"ROTA_TEST_CONCURRENCY": "50"})
    try:
        worker = workers.start()
        registration = workers.registration(worker)
        assert registration is not None
        registered = registration.id
        ids = control.queue_many([Enqueue("work_for", 0.05) for _ in range(200)])
        workers.wait(lambda: all(_final(control, job_id)() for job_id in ids), worker)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=GRACE + EXIT_MARGIN) == 0
        assert "did not stop when interrupted" not in workers.log(worker)
        assert (workers.marks / f"exited.{worker.pid}").read_text() == "exit hooks ran"
        assert workers.log(worker).rstrip().endswith(f"worker.stopped worker={registered}")
    finally:
        workers.stop_all()


def test_exiting_raising_and_hanging_handlers_do_not_kill_the_worker(
    db: Database, control: Rota, workers: Workers
) -> None:
    worker = workers.start()
    names = ("exit_sync", "exit_async", "raise_error", "hang_past_timeout")
    ids = {name: control.queue(name) for name in names}
    workers.wait(lambda: all(_final(control, job_id)() for job_id in ids.values()), worker)
    jobs = {name: control.job(job_id) for name, job_id in ids.items()}
    for name, job in jobs.items():
        assert job.state is JobState.FAILED, (name, job)
        assert len(job.errors) == 1, (name, job.errors)
        assert workers.mark(job.id, 1, "started") is not None, name

    for name in ("exit_sync", "exit_async"):
        error = jobs[name].errors[0]
        assert error.type.endswith("SystemExit"), error
        assert error.code == "EXECUTION_FAILED", error
    assert jobs["raise_error"].errors[0].type.endswith("ValueError")
    assert jobs["raise_error"].errors[0].message == "boom"
    assert jobs["hang_past_timeout"].errors[0].code == "TIMEOUT"

    following = control.queue("succeed")
    workers.wait(_final(control, following), worker)
    assert control.job(following).state is JobState.SUCCEEDED
    assert worker.poll() is None

    # The hung handler's thread still runs; SIGTERM must exit all the same.
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=GRACE + EXIT_MARGIN) == 0


def test_worker_registers_heartbeats_and_unregisters(
    db: Database, control: Rota, workers: Workers
) -> None:
    worker = workers.start()
    info = workers.registration(worker)
    assert info is not None
    assert info.host == socket.gethostname()
    assert info.pid == worker.pid
    assert set(info.queues) == {"default", "slow"}
    assert {"succeed", "async_sleep", "block_on_first_attempt"} <= set(info.tasks)

    beats = [info.heartbeat_at]

    def heartbeat_advanced_twice() -> bool:
        latest = workers.registration(worker)
        assert latest is not None, "the running worker's row disappeared"
        if latest.heartbeat_at > beats[-1]:
            beats.append(latest.heartbeat_at)
        return len(beats) >= 3

    workers.wait(heartbeat_advanced_twice, worker, timeout=2 * LEASE + 5)
    assert beats[-1] - beats[0] >= timedelta(seconds=LEASE / 3 * 0.9), beats

    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=GRACE + EXIT_MARGIN) == 0
    assert [w.id for w in control.store.cluster.workers(EPOCH) if w.id == info.id] == []
