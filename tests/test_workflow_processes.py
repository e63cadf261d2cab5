"""A workflow survives a kill -9 between two steps, on every backend, with real worker
processes: the first step's side effect happened once, its saved result is what the second
worker's replay returns, and the job ends with both steps done."""

from __future__ import annotations

import signal

import pytest

from rota import JobState, Rota
from tests.conftest import Database
from tests.workers import LEASE, POLL, Workers

pytestmark = pytest.mark.slow


def test_a_kill_between_two_steps_resumes_after_the_first(
    db: Database, control: Rota, workers: Workers
) -> None:
    first = workers.start()
    job_id = control.queue("two_steps")
    workers.wait(lambda: workers.mark(job_id, 1, "between"), first)
    assert [step.name for step in control.steps(job_id)] == ["first"]
    second = workers.start()
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=5) == -signal.SIGKILL

    def finished() -> bool:
        return control.job(job_id).state is JobState.SUCCEEDED

    workers.wait(finished, second, timeout=LEASE + POLL + 20)
    runs = {
        step: (workers.marks / f"{job_id}.{step}.runs").read_text().splitlines()
        for step in ("first", "second")
    }
    assert runs["first"] == [f"1 {first.pid}"], "the first step never ran again"
    assert runs["second"] == [f"2 {second.pid}"]
    assert control.result(job_id) == (f"first done by {first.pid}; second done by {second.pid}"), (
        "the replay returned the first step's saved result"
    )
    job = control.job(job_id)
    assert [(error.attempt, error.code) for error in job.errors] == [(1, "LEASE_EXPIRED")]
    assert [step.name for step in control.steps(job_id)] == ["first", "second"]
