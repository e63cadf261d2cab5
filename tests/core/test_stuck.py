"""The stuck decision, pure: which running attempts have run past their task's limit."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rota import ConfigError, TaskDefinition
from rota.core.stuck import STUCK_MARGIN, RunningJob, overdue, stuck_limit

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def running(job_id: int, task: str, started: timedelta = timedelta(0)) -> RunningJob:
    return RunningJob(job_id, task, "default", 1, T0 + started)


def test_stuck_after_wins_over_the_timeout_and_a_timeout_alone_gets_the_margin() -> None:
    assert stuck_limit(timeout=30.0, stuck_after=600.0) == 600.0
    assert stuck_limit(timeout=None, stuck_after=5.0) == 5.0
    assert stuck_limit(timeout=30.0, stuck_after=None) == 30.0 + STUCK_MARGIN
    assert stuck_limit(timeout=None, stuck_after=None) is None, "no limit: never stuck"


def test_an_attempt_is_stuck_only_once_it_has_run_past_its_tasks_limit() -> None:
    jobs = [running(1, "slow"), running(2, "slow", timedelta(seconds=30)), running(3, "free")]
    limits = {"slow": 60.0}

    assert overdue(jobs, limits, T0 + timedelta(seconds=60)) == [], "at the limit: not yet"
    assert overdue(jobs, limits, T0 + timedelta(seconds=61)) == [jobs[0]]
    assert overdue(jobs, limits, T0 + timedelta(seconds=91)) == jobs[:2]
    assert overdue(jobs, limits, T0 + timedelta(days=30)) == jobs[:2], "no limit for 'free'"


def test_a_running_job_names_itself_as_an_announcement_does() -> None:
    job = RunningJob(7, "report", "reports", 2, T0, schedule="nightly", lease_owner="w1")

    assert job.running_for(T0 + timedelta(minutes=2)) == 120.0
    assert (job.ref.id, job.ref.task, job.ref.queue, job.ref.attempt) == (7, "report", "reports", 2)
    assert job.ref.schedule == "nightly"


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "10"])
def test_stuck_after_is_a_positive_number_of_seconds(value: object) -> None:
    with pytest.raises(ConfigError, match="stuck_after"):
        TaskDefinition(name="t", handler=lambda: None, stuck_after=value)  # type: ignore[arg-type]


def test_stuck_after_is_part_of_the_definition_live_workers_compare() -> None:
    first = TaskDefinition(name="t", handler=lambda: None, stuck_after=60)
    second = TaskDefinition(name="t", handler=lambda: None, stuck_after=120)

    assert "stuck_after=60" in first.description
    assert first.description != second.description
