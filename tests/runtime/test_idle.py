"""An idle worker's cost, counted in statements under a ``VirtualClock``: one look a poll
(``Store.outlook``) instead of a claim, a rescue and a scheduler query each; and what the look
must not cost: a job queued elsewhere starts at the next poll, a due tick fires on time, an
expired lease is rescued within a poll of expiring."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from rota import JobContext, JobState, Rota
from rota.core.model import NewJob
from rota.testing import VirtualClock
from tests.conftest import Database
from tests.helpers import RoundTrips, eventually, sql_store

START = datetime(2026, 3, 2, 9, 0, 30, tzinfo=timezone.utc)
POLL = 1.0
POLLS = 30


class Statements:
    """Counts the statements a ``Rota`` sends, COMMITs aside."""

    def __init__(self, rota: Rota) -> None:
        self.sent: list[str] = []
        event.listen(sql_store(rota).engine, "before_cursor_execute", self._heard)

    def _heard(self, *args: Any) -> None:
        statement = str(args[2])
        if not statement.startswith("BEGIN"):  # SQLite's; other servers' is implicit
            self.sent.append(statement)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(START)


@pytest.fixture
def service(tmp_path: Path, clock: VirtualClock) -> Iterator[tuple[Rota, Rota]]:
    """A worker's ``Rota`` and another process's, on one SQLite file."""
    url = f"sqlite:///{tmp_path}/rota.db"
    worker = Rota(url, clock=clock, poll_interval=POLL, lease_seconds=30)
    other = Rota(url, clock=clock, poll_interval=POLL)
    yield worker, other
    for rota in (worker, other):
        sql_store(rota).engine.dispose()


LOOPS = 5
"""Loops that sleep on the clock between rounds: claim, rescue, scheduler, heartbeat, prune."""


async def asleep(clock: VirtualClock, idle: bool = True) -> None:
    """Until every loop sleeps (done with its last poll's work, as after a real
    millisecond-long query); ``idle``: the claim loop, the rescue and the scheduler each
    sleeping exactly a poll."""
    due = clock.now() + timedelta(seconds=POLL)

    def sleeping() -> bool:
        ahead = [deadline for deadline in clock.deadlines() if deadline > clock.now()]
        return len(ahead) >= LOOPS and (not idle or ahead.count(due) >= 3)

    await eventually(sleeping, timeout=15)


async def polls(clock: VirtualClock, count: int, *, idle: bool = True) -> None:
    """Let ``count`` polls pass, each once every loop is asleep; then wait until they are."""
    for _ in range(count):
        await asleep(clock, idle)
        clock.advance(POLL)
    await asleep(clock, idle=False)


async def settled(clock: VirtualClock) -> None:
    """Past the start: the claim loop's wait has doubled from 50 ms up to a whole poll."""
    await polls(clock, 8, idle=False)
    await asleep(clock)


def test_an_idle_worker_sends_one_statement_a_poll(
    service: tuple[Rota, Rota], clock: VirtualClock
) -> None:
    rota, _ = service

    @rota.task(cron="0 3 * * *")
    def nightly(ctx: JobContext) -> None: ...

    async def scenario() -> list[str]:
        async with rota:
            await settled(clock)
            counted = Statements(rota)
            await polls(clock, POLLS)
            return counted.sent

    sent = asyncio.run(scenario())
    looks = [s for s in sent if "EXISTS" in s]
    print(f"\n{len(sent)} statements in {POLLS} idle polls, {len(looks)} of them looks")
    # Without the look: a claim (its paused queues, its candidates), a rescue and a scheduler
    # pass (due schedules, next tick) each poll, five statements.
    assert POLLS - 1 <= len(looks) <= POLLS + 1
    assert len(sent) - len(looks) <= POLLS // 10 + 3, "heartbeats and the prune lease only"


def test_an_idle_worker_on_a_server_sends_one_round_trip_a_poll(
    server_db: Database, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted at the driver: the look runs in autocommit mode, with no ``BEGIN`` (psycopg's)
    nor ``COMMIT`` around it, and so does the heartbeat of a worker that holds no job; what
    else it sends (its clock reading, the prune lease) is a few statements a lease."""
    rota = Rota(server_db.url, table_prefix=server_db.prefix, clock=clock, poll_interval=POLL)

    @rota.task(cron="0 3 * * *")
    def nightly(ctx: JobContext) -> None: ...

    async def scenario() -> list[str]:
        async with rota:
            await settled(clock)
            trips = RoundTrips(monkeypatch, server_db.backend)
            await polls(clock, POLLS)
            return trips.sent

    try:
        sent = asyncio.run(scenario())
    finally:
        sql_store(rota).engine.dispose()
    looks = sent.count("SELECT")
    print(f"\n{len(sent)} round trips in {POLLS} idle polls: {sorted(set(sent))}")
    assert "COMMIT" not in sent and "BEGIN" not in sent, sent
    heartbeats = POLLS // 10 + 1  # a heartbeat and a clock reading every third of the lease
    assert len(sent) <= POLLS + 2 * heartbeats + 1, sent
    assert looks >= POLLS - 1


def test_the_look_misses_no_work(service: tuple[Rota, Rota], clock: VirtualClock) -> None:
    rota, other = service
    ran: list[tuple[str, datetime]] = []

    @rota.task(cron="*/5 * * * *")
    def every_five(ctx: JobContext) -> None:
        ran.append(("tick", clock.now()))

    @rota.task
    def work(ctx: JobContext) -> None:
        ran.append(("job", clock.now()))

    async def scenario() -> None:
        async with rota:
            await settled(clock)
            ran.clear()
            queued_at = clock.now()
            other.store.jobs.enqueue(
                [NewJob(task="work", payload='{"v":1,"args":[],"kwargs":{}}', run_at=queued_at)],
                queued_at,
            )  # by another process: no local nudge
            await polls(clock, 1)
            await eventually(lambda: ("job", queued_at + timedelta(seconds=POLL)) in ran)
            tick = START.replace(minute=5, second=0)
            await polls(clock, int((tick - clock.now()).total_seconds() // POLL) + 1, idle=False)
            await eventually(lambda: any(kind == "tick" for kind, _ in ran))
            (fired,) = [at for kind, at in ran if kind == "tick"]
            assert fired - tick <= timedelta(seconds=POLL)
            stuck = other.store.jobs.enqueue(
                [NewJob(task="work", payload='{"v":1,"args":[],"kwargs":{}}', run_at=clock.now())],
                clock.now(),
            )[0]
            now = clock.now()
            until = now + timedelta(seconds=30)
            (claimed,) = other.store.jobs.claim("dead", ["default"], ["work"], 1, now, until)
            assert claimed.id == stuck
            await polls(clock, 31, idle=False)
            await eventually(lambda: other.job(stuck).state is JobState.SUCCEEDED)
            assert other.job(stuck).attempt == 2, "rescued from the dead worker, then run"

    asyncio.run(scenario())


def test_a_due_schedule_it_cannot_read_costs_a_pass_a_poll(
    service: tuple[Rota, Rota], clock: VirtualClock
) -> None:
    """Its row is skipped and its tick stays due: the scheduler looks again a poll later, where
    it used to pass again at once, for ever, within the same instant."""
    rota, other = service

    @rota.task(cron="0 3 * * *")
    def nightly(ctx: JobContext) -> None: ...

    other.schedule("* * * * *", "nightly", name="theirs")
    store = sql_store(other)
    table = store.schema.schedules
    with store.engine.begin() as connection:
        connection.execute(table.update().where(table.c.name == "theirs").values(source="file"))

    async def scenario() -> list[str]:
        async with rota:
            await settled(clock)
            counted = Statements(rota)
            await polls(clock, POLLS)
            return counted.sent

    sent = asyncio.run(scenario())
    print(f"\n{len(sent)} statements in {POLLS} polls beside an unreadable due schedule")
    assert len(sent) <= 4 * POLLS, "a look, the due schedules and the next tick, a poll"
