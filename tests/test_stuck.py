"""Stuck jobs on every backend, with a fake clock: a running job whose lease a live worker
renews but that has run past its task's ``stuck_after`` (or ``timeout`` plus the margin) is
marked and announced ``job.stuck`` once per attempt, whichever process looks and however often;
``rota check`` and the dashboard show it while that attempt runs."""

from __future__ import annotations

import asyncio
import json
import random
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from rota import Event, JobContext, Rota
from rota.cli import main
from rota.core.stuck import STUCK_MARGIN
from rota.core.transitions import Verdict, VerdictKind, after_attempt
from rota.dashboard import create_app
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.settings import Pool, WorkerSettings
from rota.testing import FakeClock
from tests.conftest import Database
from tests.helpers import hand_built

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

LEASE = timedelta(seconds=30)
BEAT = timedelta(seconds=10)


class Hung:
    """A job of task ``hang`` (queue ``slow``) claimed by worker ``w1``, which renews its lease
    every ``BEAT`` and never finishes it; the process looks for stuck jobs by draining queue
    ``default``, which leaves the job alone."""

    def __init__(self, rota: Rota, clock: FakeClock, **options: Any) -> None:
        self.rota, self.clock = rota, clock
        self.heard: list[Event] = []
        self.held: dict[int, str] = {}
        """The jobs claimed, by the worker that renews their lease."""

        @rota.task(name="hang", queue="slow", retry_delay=0, **options)
        def hang(ctx: JobContext) -> None: ...

        rota.on("job.stuck", self.heard.append)
        self.id = rota.queue(hang)
        self.claim("w1")

    def claim(self, worker: str) -> int:
        """The next pending job of ``hang``, claimed by ``worker``."""
        now = self.clock.now()
        (job,) = self.rota.store.jobs.claim(worker, ["slow"], ["hang"], 1, now, now + LEASE)
        self.held[job.id] = worker
        return job.id

    def run_for(self, seconds: float) -> None:
        """Move the clock on by ``seconds``, the workers renewing their leases as live ones do."""
        left = timedelta(seconds=seconds)
        while left > timedelta(0):
            step = min(BEAT, left)
            self.clock.advance(step)
            left -= step
            now = self.clock.now()
            for worker in set(self.held.values()):
                ids = [job_id for job_id, owner in self.held.items() if owner == worker]
                _, lost = self.rota.store.jobs.heartbeat(worker, ids, now, now + LEASE)
                assert lost == set()

    def look(self) -> list[tuple[int, int]]:
        """One look for stuck jobs (a drain makes one before claiming): the (job, attempt) of
        every ``job.stuck`` heard so far."""
        self.rota.drain(queue="default")
        return [(event.fields["job_id"], event.fields["attempt"]) for event in self.heard]

    @property
    def stuck(self) -> bool:
        return self.rota.job(self.id).stuck


def test_a_job_past_stuck_after_is_announced_once_and_marked(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    hung = Hung(make_rota(), clock, stuck_after=600, timeout=30)
    started = clock.now()

    hung.run_for(600)
    assert hung.look() == [], "at stuck_after exactly: not yet (and stuck_after wins)"
    assert not hung.stuck and hung.rota.inspect.stuck() == []

    hung.run_for(10)
    assert hung.look() == [(hung.id, 1)]
    assert hung.stuck
    (event,) = hung.heard
    assert event.fields["task"] == "hang" and event.fields["queue"] == "slow"
    assert event.fields["started_at"] == started and event.fields["running_for"] == 610.0
    assert event.fields["limit"] == 600 and event.fields["lease_owner"] == "w1"
    (listed,) = hung.rota.inspect.stuck()
    assert (listed.id, listed.attempt, listed.started_at) == (hung.id, 1, started)

    hung.run_for(60)
    assert hung.look() == [(hung.id, 1)], "announced once, however often it is looked for"
    other = make_rota()
    other.on("job.stuck", hung.heard.append)
    other.define_task(hung.rota.registry.get("hang"))
    other.drain(queue="default")
    assert len(hung.heard) == 1, "nor by another process"


def test_a_timeout_alone_gives_the_margin_and_a_task_without_either_is_never_stuck(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()
    hung = Hung(rota, clock, timeout=30)

    @rota.task(queue="slow")
    def free(ctx: JobContext) -> None: ...

    unbounded = rota.queue(free)
    now = clock.now()
    rota.store.jobs.claim("w1", ["slow"], ["free"], 1, now, now + LEASE)

    hung.run_for(30 + STUCK_MARGIN)
    assert hung.look() == []
    hung.run_for(10)
    assert hung.look() == [(hung.id, 1)]
    assert not rota.job(unbounded).stuck
    assert [job.id for job in rota.inspect.stuck()] == [hung.id]


def test_an_expired_lease_is_the_rescues_and_a_new_attempt_is_announced_again(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    hung = Hung(make_rota(), clock, stuck_after=60)
    hung.run_for(70)
    assert hung.look() == [(hung.id, 1)]

    del hung.held[hung.id]  # w1 died: no more renewals
    clock.advance(LEASE * 2)
    hung.look()  # the rescue takes the job back to pending, its retry due at once
    assert not hung.stuck and hung.rota.inspect.stuck() == []
    assert hung.claim("w2") == hung.id
    assert not hung.stuck, "the new attempt starts unmarked"
    hung.run_for(60)
    assert hung.look() == [(hung.id, 1)]
    hung.run_for(10)
    assert hung.look() == [(hung.id, 1), (hung.id, 2)]
    assert hung.stuck


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_an_attempt_given_back_starts_unmarked_when_it_runs_again(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    hung = Hung(make_rota(), clock, stuck_after=60)
    hung.run_for(70)
    assert hung.look() == [(hung.id, 1)]

    now = clock.now()
    released = Verdict(VerdictKind.RELEASED)
    policy = hung.rota.registry.get("hang").policy
    given_back = after_attempt(hung.rota.job(hung.id), released, now, policy, random.Random())
    assert hung.rota.store.jobs.complete("w1", [given_back], now).job_ids
    assert hung.claim("w1") == hung.id and hung.rota.job(hung.id).attempt == 1
    assert not hung.stuck


def test_a_worker_looks_at_most_once_a_lease_period(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    hung = Hung(make_rota(), clock, stuck_after=60)
    hung.rota.queue("hang")
    hung.run_for(10)
    second = hung.claim("w1")
    settings = WorkerSettings(pools=(Pool(("default",), 1),), poll_interval=1.0, lease_seconds=30)
    with ThreadPoolExecutor(1) as threads:
        executor = Executor(hung.rota.registry, clock, threads)
        housekeeping = hand_built(hung.rota, executor, settings).housekeeping

        hung.run_for(60)
        assert asyncio.run(housekeeping.stuck_once()) == 1, "the first job, at 70 s"
        hung.run_for(20)
        assert asyncio.run(housekeeping.stuck_once()) == 0, "the second is stuck; looked 20 s ago"
        assert not hung.rota.job(second).stuck
        hung.run_for(10)
        assert asyncio.run(housekeeping.stuck_once()) == 1
        assert hung.rota.job(second).stuck


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_rota_check_names_a_stuck_job_and_exits_1(
    db: Database, make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    hung = Hung(make_rota(), clock, stuck_after=60)

    def check(*args: str) -> Any:
        url = ["--url", db.url, "--table-prefix", db.prefix]
        return CliRunner().invoke(main, ["check", *args, *url])

    hung.run_for(70)
    assert "JOBS_STUCK" not in check().output, "not announced yet: not shown"
    hung.look()

    checked = check()
    assert checked.exit_code == 1, checked.output
    assert f"JOBS_STUCK: job {hung.id} of task 'hang' is stuck: attempt 1" in checked.stderr
    assert "Stuck jobs" in checked.stdout and "w1" in checked.stdout
    data = json.loads(check("--json").stdout)
    (stuck,) = data["stuck_jobs"]
    assert (stuck["id"], stuck["task"], stuck["attempt"]) == (hung.id, "hang", 1)
    assert stuck["running_seconds"] > 0 and data["ok"] is False


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_the_dashboard_shows_a_stuck_job(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    rota = make_rota()
    hung = Hung(rota, clock, stuck_after=60)
    client = TestClient(create_app(rota), base_url="http://localhost")
    badge = '<span class="state state-stuck">stuck</span>'
    assert badge not in client.get(f"/jobs/{hung.id}").text

    hung.run_for(70)
    hung.look()
    page = client.get(f"/jobs/{hung.id}").text
    assert badge in page and "Stuck: attempt 1 has run for 1m 10s" in page
    assert badge in client.get("/jobs").text
    overview = client.get("/").text
    assert "<h2>Stuck jobs</h2>" in overview and f'href="/jobs/{hung.id}"' in overview
