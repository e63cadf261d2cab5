"""Workflow steps, sleeps and waits in ``isolation="process"`` handlers (DESIGN.md, "Durable
workflows": they work in process-isolated handlers too): the step's function runs in the
child, its result is saved by the worker, fenced by the lease, and a later attempt's child gets
it back without running it; a sleep and a wait park the job from the child. The handlers are
module-level functions, since a child process imports its handler by name."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from rota import JobContext, JobState, Rota
from rota.errors import ErrorCode
from rota.testing import FakeClock

pytestmark = pytest.mark.slow


def append(path: str, line: str) -> str:
    """The step's side effect: one line more in ``path``."""
    with open(path, "a") as file:
        file.write(line + "\n")
    return f"{line} in {os.getpid()}"


def isolated_workflow(ctx: JobContext, path: str) -> str:
    charged = ctx.step("charge", append, path, "charge")
    if ctx.attempt == 1:
        raise RuntimeError("fails after the charge")
    ctx.sleep("cool-off", 60)
    answer = ctx.wait_for("approved", timeout=timedelta(hours=1))
    ctx.step("mail", append, path, f"mail {answer}")
    return str(charged)


def isolated_bad_step(ctx: JobContext) -> None:
    ctx.step("bad", lambda: {1, 2})


def test_an_isolated_handler_saves_steps_sleeps_and_waits(
    rota: Rota, clock: FakeClock, tmp_path: Path
) -> None:
    rota.task(isolation="process", retries=2, retry_delay=0)(isolated_workflow)
    effects = tmp_path / "effects"
    job_id = rota.queue(isolated_workflow, str(effects))
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.attempt) == (JobState.PENDING, 1), "retried, then asleep"
    assert job.run_at == clock.now() + timedelta(seconds=60)
    clock.advance(60)
    assert rota.drain().waiting == 1
    assert rota.job(job_id).state is JobState.WAITING
    assert rota.signal(job_id, "approved", "yes")
    rota.drain()
    job = rota.job(job_id)
    assert job.state is JobState.SUCCEEDED, job.errors
    assert effects.read_text().splitlines() == ["charge", "mail yes"]
    saved = {step.name: step.result for step in rota.steps(job_id)}
    assert list(saved) == ["charge", "cool-off", "wait_for:approved", "mail"]
    assert rota.result(job_id) == saved["charge"], "every attempt's child got the saved result"


def test_an_isolated_step_whose_result_is_not_json_fails_the_job(rota: Rota) -> None:
    rota.task(isolation="process", retries=3)(isolated_bad_step)
    job_id = rota.queue(isolated_bad_step)
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.errors[-1].code) == (JobState.FAILED, ErrorCode.INVALID_RESULT)
    assert "step 'bad'" in job.errors[-1].message


def isolated_nested_step(ctx: JobContext) -> None:
    ctx.step("outer", lambda: ctx.step("inner", lambda: 1))


def test_an_isolated_step_inside_a_step_is_refused_not_hung(rota: Rota) -> None:
    rota.task(isolation="process", retries=0, timeout=30)(isolated_nested_step)
    job_id = rota.queue(isolated_nested_step)
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.errors[-1].code) == (JobState.FAILED, ErrorCode.INVALID_ARGUMENTS)
    assert "steps do not nest" in job.errors[-1].message
