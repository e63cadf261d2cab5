"""``ctx.progress``: checked in the handler, written with the heartbeat (never a write per call),
kept after the job ends, cleared by the next claim, and shown by ``rota job``, ``rota jobs``,
``Rota.jobs()`` and the dashboard.

The database tests run on SQLite, MariaDB and PostgreSQL with a short lease, so heartbeats
(a third of it) come every 0.1 s of real time.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event

from rota import InvalidArguments, JobContext, JobState, Progress, Rota
from rota.cli import main
from rota.context import MAX_PROGRESS_NOTE, checked_progress
from rota.core.clock import SystemClock
from rota.core.model import ProgressReport
from rota.dashboard import create_app
from rota.display import progress as shown_progress
from rota.runtime.worker.progress import ProgressBoard
from rota.testing import FakeClock
from tests.apps import progress_app
from tests.conftest import Database
from tests.helpers import sql_store, wait_until

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

LEASE = 1.0  # a heartbeat every third: short, yet not lost to a busy CI machine
LAST = Progress(1.0, "1000 of 1000 <rows>")


def context(**options: Any) -> JobContext:
    adapter = logging.LoggerAdapter(logging.getLogger("test"), {})
    return JobContext(1, "t", "default", 1, None, adapter, **options)


# -- the values a handler may report -------------------------------------------------------


@pytest.mark.parametrize(
    "fraction", [True, False, -0.01, 1.0001, math.nan, math.inf, -math.inf, "0.5", None, 1j]
)
def test_a_fraction_is_a_finite_real_from_0_to_1(fraction: Any) -> None:
    with pytest.raises(InvalidArguments, match="progress must be a number from 0 to 1"):
        context().progress(fraction)


def test_ints_fractions_and_floats_in_range_are_kept_as_floats() -> None:
    assert checked_progress(0) == Progress(0.0, None)
    assert checked_progress(1, "done") == Progress(1.0, "done")
    assert checked_progress(Fraction(1, 4), "") == Progress(0.25, "")
    assert type(checked_progress(1).fraction) is float


def test_a_note_is_text_cut_to_its_column_and_never_a_nul() -> None:
    with pytest.raises(InvalidArguments, match="str or None, got int"):
        checked_progress(0.5, 3)
    with pytest.raises(InvalidArguments, match="NUL"):
        checked_progress(0.5, "a\x00b")
    with pytest.raises(InvalidArguments, match="surrogate"):
        checked_progress(0.5, "a\ud800")
    long = "é" * (MAX_PROGRESS_NOTE + 50)
    assert checked_progress(0.5, long).note == "é" * MAX_PROGRESS_NOTE
    hostile = "<b>x</b>\x1b[2J\u202e"
    assert checked_progress(0.5, hostile).note == hostile  # stored as given, escaped when shown


def test_a_context_made_by_hand_checks_and_hands_on_nothing() -> None:
    context().progress(0.5, "fine")
    seen: list[Progress] = []
    context(on_progress=seen.append).progress(0.25, "quarter")
    assert seen == [Progress(0.25, "quarter")]


def test_the_board_keeps_each_attempts_last_value_until_taken() -> None:
    board = ProgressBoard()
    first, second = board.reporter(7, 1), board.reporter(7, 2)
    other = board.reporter(8, 1)
    for n in range(100):
        first(Progress(n / 100))
    second(Progress(0.1))
    other(Progress(0.9))
    assert board.take({7}) == [
        ProgressReport(7, 1, Progress(0.99)),
        ProgressReport(7, 2, Progress(0.1)),
    ]
    assert board.take({7, 8}) == [], "taken once; job 8 was not held, so it was dropped"
    first(Progress(0.5))
    board.put_back([ProgressReport(7, 1, Progress(0.2)), ProgressReport(9, 1, Progress(0.3))])
    assert board.take({7, 9}) == [
        ProgressReport(7, 1, Progress(0.5)),  # the newer value wins over the one put back
        ProgressReport(9, 1, Progress(0.3)),
    ]


def test_percentages_shown_never_claim_the_end_or_the_start_too_early() -> None:
    assert shown_progress(None) == "-"
    assert shown_progress(Progress(0.0)) == "0%"
    assert shown_progress(Progress(0.001)) == "1%"
    assert shown_progress(Progress(0.4, "4 of 10 files")) == "40% 4 of 10 files"
    assert shown_progress(Progress(0.2899999916553497)) == "29%"  # 0.29 in MySQL's FLOAT
    assert shown_progress(Progress(0.999)) == "99%"
    assert shown_progress(Progress(1.0, "")) == "100%"


# -- written with the heartbeat ------------------------------------------------------------


@dataclass
class Writes:
    """UPDATE statements one engine sent: rows of progress written, heartbeats."""

    progress: int = 0
    heartbeats: int = 0


@contextmanager
def counted(rota: Rota, db: Database) -> Iterator[Writes]:
    writes = Writes()
    workers = db.table("workers")

    def count(
        conn: Any, cursor: Any, statement: str, parameters: Any, ctx: Any, many: bool
    ) -> None:
        if not statement.lstrip().upper().startswith("UPDATE"):
            return
        if "progress" in statement and "lease_until" not in statement:  # not a claim
            writes.progress += len(parameters) if many else 1
        elif workers in statement and "heartbeat_at" in statement:
            writes.heartbeats += 1

    engine = sql_store(rota).engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield writes
    finally:
        event.remove(engine, "before_cursor_execute", count)


def draining(rota: Rota) -> threading.Thread:
    thread = threading.Thread(target=rota.drain, name="drain")
    thread.start()
    return thread


def test_a_thousand_reports_cost_at_most_one_write_per_heartbeat(
    make_rota: Callable[..., Rota], db: Database
) -> None:
    """Another instance sees the values while the job runs, and the last one after it ends."""
    options = {"clock": SystemClock(), "lease_seconds": LEASE}
    worker, observer = make_rota(**options), make_rota(**options)
    release = threading.Event()

    @worker.task
    def crunch(ctx: JobContext) -> None:
        for done in range(1, 1001):
            ctx.progress(done / 1000, f"{done} of 1000 <rows>")
            time.sleep(0.0005)  # the loop spans several heartbeats
        release.wait(10)

    job_id = worker.queue(crunch)
    with counted(worker, db) as writes:
        thread = draining(worker)
        try:
            seen: list[Progress] = []

            def progressed() -> bool:
                value = observer.job(job_id).progress
                if value is not None and value not in seen:
                    seen.append(value)
                return value == LAST

            wait_until(progressed, every=0.02)
            assert observer.jobs()[0].progress == LAST  # Rota.jobs(), while it runs
        finally:
            release.set()
            thread.join(10)
    assert 1 <= writes.progress <= writes.heartbeats, writes
    assert writes.progress < 100, "never a write per call"
    fractions = [value.fraction for value in seen]
    assert fractions == sorted(fractions) and seen[-1] == LAST
    job = observer.job(job_id)
    assert (job.state, job.progress) == (JobState.SUCCEEDED, LAST), "kept after the end"


def test_a_bad_value_raises_in_the_handler_which_may_go_on(
    make_rota: Callable[..., Rota],
) -> None:
    rota = make_rota(clock=SystemClock(), lease_seconds=LEASE)
    refused: list[str] = []

    @rota.task
    def careless(ctx: JobContext) -> None:
        try:
            ctx.progress(2.0, "too far")
        except InvalidArguments as error:
            refused.append(str(error))
        ctx.progress(0.5, "fine")
        deadline = time.monotonic() + 30
        while rota.job(ctx.job_id).progress is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until a heartbeat has written it

    @rota.task(retries=0)
    def lets_it_fail(ctx: JobContext) -> None:
        ctx.progress(float("nan"))

    kept, failed = rota.queue(careless), rota.queue(lets_it_fail)
    assert rota.drain().succeeded == 1
    assert refused == ["progress must be a number from 0 to 1, got 2.0"]
    assert rota.job(kept).progress == Progress(0.5, "fine")
    error = rota.job(failed).errors[-1]
    assert (error.code, error.type) == ("INVALID_ARGUMENTS", "rota.errors.InvalidArguments")


def test_ended_attempts_values_are_taken_and_the_others_kept() -> None:
    board = ProgressBoard()
    board.reporter(7, 1)(Progress(0.4))
    board.reporter(7, 2)(Progress(0.6))
    board.reporter(8, 1)(Progress(0.9))
    assert board.take_ended({7}) == [
        ProgressReport(7, 1, Progress(0.4)),
        ProgressReport(7, 2, Progress(0.6)),
    ]
    assert board.take_ended({7}) == []
    assert board.take({8}) == [ProgressReport(8, 1, Progress(0.9))], "still the heartbeat's"


def test_the_last_value_before_the_end_is_kept_without_a_heartbeat_between(
    make_rota: Callable[..., Rota],
) -> None:
    rota = make_rota(clock=SystemClock(), lease_seconds=60)  # a heartbeat every 20 s

    @rota.task
    def quick(ctx: JobContext) -> None:
        ctx.progress(0.25, "a quarter")
        ctx.progress(1.0, "all done")

    job_id = rota.queue(quick)
    assert rota.drain().succeeded == 1
    job = rota.job(job_id)
    assert (job.state, job.progress) == (JobState.SUCCEEDED, Progress(1.0, "all done"))


def test_a_new_attempt_starts_without_the_last_ones_progress(
    make_rota: Callable[..., Rota],
) -> None:
    options = {"clock": SystemClock(), "lease_seconds": LEASE}
    rota, observer = make_rota(**options), make_rota(**options)
    at_start: list[Progress | None] = []

    @rota.task(retries=1, retry_delay=0)
    def flaky(ctx: JobContext) -> None:
        at_start.append(observer.job(ctx.job_id).progress)
        if ctx.attempt == 1:
            ctx.progress(0.5, "half")
            wait_until(lambda: observer.job(ctx.job_id).progress is not None)
            raise RuntimeError("not this time")

    job_id = rota.queue(flaky)
    result = rota.drain()
    assert (result.retried, result.succeeded) == (1, 1)
    assert at_start == [None, None], "the claim of attempt 2 cleared attempt 1's value"
    assert rota.job(job_id).progress is None


def test_only_the_attempt_that_holds_the_job_writes_its_progress(
    rota: Rota, clock: FakeClock
) -> None:
    @rota.task
    def slow(ctx: JobContext) -> None: ...

    job_id = rota.queue(slow)
    now = clock.now()
    until = now + timedelta(minutes=1)
    (claimed,) = rota.store.jobs.claim("w1", ["default"], ["slow"], 1, now, until)
    attempt = claimed.attempt

    def report(worker: str, tried: int, fraction: float) -> Progress | None:
        rota.store.jobs.heartbeat(
            worker, [job_id], now, until, [ProgressReport(job_id, tried, Progress(fraction))]
        )
        return rota.job(job_id).progress

    assert report("w1", attempt + 1, 0.1) is None, "another attempt's late value"
    assert report("w2", attempt, 0.2) is None, "a worker that does not hold the job"
    assert report("w1", attempt, 0.3) == Progress(0.3)
    assert rota.store.jobs.heartbeat("w1", [job_id], now, until) == (set(), set())
    assert rota.job(job_id).progress == Progress(0.3), "no report leaves the value as it is"


# -- shown ---------------------------------------------------------------------------------

NOTE = "4 of 10 <b>files</b>\x1b[2J"


def running_with_progress(rota: Rota, clock: FakeClock) -> int:
    @rota.task
    def slow(ctx: JobContext) -> None: ...

    @rota.task
    def quick(ctx: JobContext) -> None: ...

    rota.queue(quick)
    job_id = rota.queue(slow)
    now = clock.now()
    until = now + timedelta(minutes=1)
    (claimed,) = rota.store.jobs.claim("w1", ["default"], ["slow"], 1, now, until)
    report = ProgressReport(job_id, claimed.attempt, Progress(0.4, NOTE))
    rota.store.jobs.heartbeat("w1", [job_id], now, until, [report])
    return job_id


def test_rota_job_and_rota_jobs_show_it_escaped(db: Database, rota: Rota, clock: FakeClock) -> None:
    job_id = running_with_progress(rota, clock)

    def cli(*args: str) -> str:
        result = CliRunner().invoke(main, [*args, "--url", db.url, "--table-prefix", db.prefix])
        assert result.exit_code == 0, result.output
        return result.stdout

    shown = "40% 4 of 10 <b>files</b>\\x1b[2J"
    facts = cli("job", str(job_id))
    assert [line.split()[0] for line in facts.splitlines() if shown in line] == ["progress"]
    assert "\x1b" not in facts
    listing = cli("jobs")
    assert "progress" in listing.splitlines()[0]
    (row,) = [line for line in listing.splitlines() if line.startswith(str(job_id))]
    assert shown in row
    full = json.loads(cli("job", str(job_id), "--json"))
    assert full["progress"] == {"fraction": pytest.approx(0.4), "note": NOTE}
    listed = json.loads(cli("jobs", "--json"))
    assert [job["progress"] is not None for job in listed] == [True, False]
    (status,) = [s for s in rota.jobs() if s.id == job_id]
    assert status.progress is not None
    assert status.progress.fraction == pytest.approx(0.4) and status.progress.note == NOTE


def test_the_dashboard_shows_it_escaped(rota: Rota, clock: FakeClock) -> None:
    job_id = running_with_progress(rota, clock)
    client = TestClient(create_app(rota), base_url="http://localhost")
    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert "40% 4 of 10 &lt;b&gt;files&lt;/b&gt;" in page.text and "<b>files" not in page.text
    assert '<progress max="1" value="0.4' in page.text
    listing = client.get("/jobs")
    assert "<th>progress</th>" in listing.text
    assert listing.text.count("40% 4 of 10 &lt;b&gt;files&lt;/b&gt;") == 1


# -- isolation="process" -------------------------------------------------------------------


@pytest.mark.slow
def test_an_isolated_childs_progress_reaches_the_database(
    make_rota: Callable[..., Rota], db: Database, tmp_path: Path
) -> None:
    if db.backend != "sqlite":
        pytest.skip("the pipe from the child is the same whatever the database")
    options = {"clock": SystemClock(), "lease_seconds": LEASE}
    worker, observer = make_rota(**options), make_rota(**options)
    worker.task(isolation="process")(progress_app.reports_then_waits)
    release = tmp_path / "release"
    job_id = worker.queue(progress_app.reports_then_waits, str(release))
    with counted(worker, db) as writes:
        thread = draining(worker)
        try:
            wait_until(lambda: observer.job(job_id).progress == LAST)
        finally:
            release.touch()
            thread.join(15)
    assert 1 <= writes.progress <= writes.heartbeats
    job = observer.job(job_id)
    assert (job.state, job.progress) == (JobState.SUCCEEDED, LAST)
