"""Rows this rota cannot read, written past it with SQL (a newer rota's state or source, a hand
edit's JSON), on every backend: each is shown as such, skipped by whatever cannot use it,
logged once, and listed by ``rota check``; a running job with no lease is rescued.

Each used to take something down: a job in state ``archived`` made the dashboard's pages and
``/metrics`` answer 500 and ``rota jobs`` fail; a dead worker's row with a ``tasks`` column
that is not JSON, or a schedule whose source rota does not know, made every worker's
``start()`` raise; and a ``running`` job whose ``lease_until`` is NULL was never rescued.
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from rota import JobContext, JobState, Rota
from rota.cli import main
from rota.core.model import WorkerInfo
from rota.dashboard import create_app
from rota.store.events import log_event
from rota.store.rows import ReportedRows
from rota.store.values import UnreadableRow
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import sql_store

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

DEAD_WORKER = "dead-worker-1"
LEASELESS = (
    "UPDATE {jobs} SET state = 'running', attempt = 1, lease_owner = NULL, lease_until = NULL "
    "WHERE id = :id"
)


@dataclass
class Bad:
    """The ids and names of the rows written past rota."""

    archived: int
    leaseless: int
    schedule: str


def sql(db: Database, rota: Rota, statement: str, **values: object) -> None:
    """One statement of an operator's, ``{jobs}``, ``{workers}`` and ``{schedules}`` naming
    the test's tables."""
    tables = {name: db.table(name) for name in ("jobs", "workers", "schedules")}
    with sql_store(rota).engine.begin() as connection:
        connection.execute(text(statement.format(**tables)), values)


def write_bad_rows(db: Database, rota: Rota) -> Bad:
    """A job in state ``archived``, a running job with no lease, a dead worker whose ``tasks``
    is not JSON, and the row of the code schedule ``nightly`` with source ``martian``."""
    rota.drain()  # writes the code schedule's row
    sql(db, rota, "UPDATE {schedules} SET source = 'martian' WHERE name = 'nightly'")
    archived, leaseless = rota.queue("greet", "ada"), rota.queue("greet", "grace")
    sql(db, rota, "UPDATE {jobs} SET state = 'archived' WHERE id = :id", id=archived)
    sql(db, rota, LEASELESS, id=leaseless)
    long_ago = START - timedelta(days=1)
    dead = WorkerInfo(DEAD_WORKER, "gone", 1, ("default",), ("greet",), 1, long_ago, long_ago)
    rota.store.cluster.register_worker(dead)
    sql(db, rota, "UPDATE {workers} SET tasks = '{{not json' WHERE id = :id", id=DEAD_WORKER)
    return Bad(archived, leaseless, "nightly")


def define(rota: Rota, ran: list[str]) -> None:
    @rota.task
    def greet(ctx: JobContext, name: str) -> None:
        ran.append(name)

    @rota.task(cron="0 3 * * *")
    def nightly(ctx: JobContext) -> None: ...


@pytest.fixture
def seeded(make_rota: Callable[..., Rota], db: Database) -> tuple[Rota, Bad, list[str]]:
    rota = make_rota()
    ran: list[str] = []
    define(rota, ran)
    return rota, write_bad_rows(db, rota), ran


def test_the_dashboard_shows_an_unknown_state_and_answers(
    seeded: tuple[Rota, Bad, list[str]],
) -> None:
    rota, bad, _ = seeded
    client = TestClient(create_app(rota), base_url="http://127.0.0.1")
    pages = {path: client.get(path) for path in ("/", "/jobs", f"/jobs/{bad.archived}")}
    pages.update({path: client.get(path) for path in ("/metrics", "/workers", "/schedules")})
    assert {path: page.status_code for path, page in pages.items()} == dict.fromkeys(pages, 200)
    assert "archived (unreadable)" in pages["/jobs"].text
    assert "<code>archived</code> is not one this version of rota knows" in (
        pages[f"/jobs/{bad.archived}"].text
    )
    assert 'rota_jobs{state="unknown"} 1.0' in pages["/metrics"].text
    filtered = client.get("/jobs?state=unknown")
    assert filtered.status_code == 200 and f"/jobs/{bad.archived}" in filtered.text
    assert f"/jobs/{bad.leaseless}" not in filtered.text, "only the unknown state"


def test_the_cli_lists_the_rows_and_check_fails_naming_each(
    seeded: tuple[Rota, Bad, list[str]], db: Database
) -> None:
    _, bad, _ = seeded
    runner = CliRunner()
    where = ["--url", db.url, "--table-prefix", db.prefix]
    listed = runner.invoke(main, ["jobs", *where])
    assert listed.exit_code == 0, listed.output
    assert "Traceback" not in listed.output and "archived (unreadable)" in listed.output
    shown = runner.invoke(main, ["job", str(bad.archived), *where])
    assert shown.exit_code == 0 and "'archived' is not one this rota knows" in shown.output
    checked = runner.invoke(main, ["check", *where])
    assert checked.exit_code == 1, checked.output
    for named in (f"job {bad.archived} ", f"worker {DEAD_WORKER} ", "schedule nightly "):
        assert f"UNREADABLE_ROW: {named}cannot be read" in checked.stderr, checked.stderr
    assert "{not json" in checked.stderr and "'martian'" in checked.stderr
    as_json = runner.invoke(main, ["check", "--json", *where])
    assert as_json.exit_code == 1
    rows = json.loads(as_json.stdout)["unreadable_rows"]
    keys = {(row["kind"], row["key"]) for row in rows}
    assert keys == {("job", str(bad.archived)), ("worker", DEAD_WORKER), ("schedule", "nightly")}


def test_workers_start_beside_the_rows_and_log_each_once(
    seeded: tuple[Rota, Bad, list[str]],
    make_rota: Callable[..., Rota],
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A second worker of the same code starts (its schedule sync meets the unreadable row of
    its own schedule), drains and polls; each row it cannot use is logged once."""
    rota, bad, ran = seeded
    worker = make_rota()
    define(worker, ran)
    caplog.set_level(logging.WARNING, logger="rota.store")

    async def work() -> None:
        await worker.start()
        try:
            for _ in range(3):
                clock.advance(timedelta(hours=8))
                await worker.adrain()
            await asyncio.sleep(0.3)  # some polls of the running loops
        finally:
            await worker.stop()

    asyncio.run(work())
    logged = [r.getMessage() for r in caplog.records if getattr(r, "event", "") == "row.unreadable"]
    assert len(logged) == 2, logged
    assert any(f"worker {DEAD_WORKER} " in line for line in logged)
    assert any("schedule nightly " in line and "'martian'" in line for line in logged)
    assert rota.job(bad.archived).state is JobState.UNKNOWN, "left alone"
    assert rota.job(bad.archived).unknown_state == "archived"
    assert rota.store.schedules.all() == [], "the unreadable schedule is listed by check only"


def test_a_running_job_with_no_lease_is_rescued(
    make_rota: Callable[..., Rota], db: Database
) -> None:
    """By the rescue's query and its compare-and-set alike: without either, it stays
    ``running`` for ever."""
    rota = make_rota()
    ran: list[str] = []
    define(rota, ran)
    leaseless = rota.queue("greet", "grace")
    sql(db, rota, LEASELESS, id=leaseless)
    rota.drain()
    job = rota.job(leaseless)
    assert job.state is JobState.SUCCEEDED and ran == ["grace"]
    (lost,) = job.errors
    assert lost.code == "LEASE_EXPIRED" and "no lease" in lost.message


def test_the_memory_of_logged_rows_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    reported = ReportedRows(log_event, limit=2)
    first, second, third = (UnreadableRow("worker", key, "its tasks ...") for key in "abc")
    caplog.set_level(logging.WARNING, logger="rota.store")
    for row in (first, second, first, third, first, second):
        reported.report(row)
    logged = [record.key for record in caplog.records]  # type: ignore[attr-defined]
    assert logged == ["a", "b", "c", "b"], "b was the least lately met when c came"
