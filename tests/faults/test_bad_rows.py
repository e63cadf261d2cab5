"""A real ``rota worker`` meets a job row it cannot read and a handler that raises
``StopIteration``: each fails alone, recorded and logged, and the worker keeps claiming.

In a worker of old, the first ended the claim loop in silence (the process kept heartbeating
and looked healthy) and the second left its job ``running`` for ever.
"""

from __future__ import annotations

import pytest

from rota import JobState, Rota
from tests.runtime.test_loop_errors import hand_edit
from tests.workers import Workers

pytestmark = pytest.mark.slow


def test_an_unreadable_row_and_a_stop_iteration_fail_alone_and_the_worker_goes_on(
    control: Rota, workers: Workers
) -> None:
    control.pause_queue("default")  # nothing is claimed before the row is edited
    good = control.queue("succeed")
    unreadable = control.queue("succeed")
    hand_edit(control, unreadable, errors="{not json")
    stopped = control.queue("stop_iteration")
    worker = workers.start()
    control.resume_queue("default")
    ids = (good, unreadable, stopped)
    workers.wait(lambda: all(control.job(i).state.is_final for i in ids), worker, timeout=30)

    assert control.job(good).state is JobState.SUCCEEDED
    bad = control.job(unreadable)
    assert bad.state is JobState.FAILED and [e.code for e in bad.errors] == ["INVALID_ARGUMENTS"]
    assert "{not json" in bad.errors[0].message
    stop = control.job(stopped)
    assert stop.state is JobState.FAILED, "retries=2: three recorded attempts, none stuck running"
    assert [(e.attempt, e.type) for e in stop.errors] == [
        (n, "builtins.StopIteration") for n in (1, 2, 3)
    ]

    later = control.queue("succeed")
    workers.wait(lambda: control.job(later).state is JobState.SUCCEEDED, worker, timeout=30)
    log = workers.log(worker)
    for job_id in (unreadable, stopped):
        assert f"job.failed job_id={job_id}" in log, log[-3000:]
    assert worker.poll() is None, "the worker is still running"
