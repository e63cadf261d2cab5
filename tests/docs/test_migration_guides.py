"""The migration guides' worked examples (examples/migrating/, shown in docs/migrating/) behave as
the systems they replace did, on SQLite and a fake clock: their schedules tick at the times the
original fired, worked out by hand below (across a change to summer time where the original had
a time zone), once per tick however many workers run them; failures are retried on the
original's policy; unique jobs are queued once; results come back.

Each test runs an example's tasks, as its module defines them, on ``Rota``s of its own (one per
worker process it stands for); the lists the examples' stand-ins record into start empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType

import pytest
from examples.migrating.apscheduler import tasks as aps
from examples.migrating.celery_beat import tasks as celery
from examples.migrating.django_q_rq import tasks as djq
from examples.migrating.sidequest import tasks as sidequest

from rota import ErrorCode, Job, JobState, Rota
from rota.testing import FakeClock

EXAMPLES = (aps, celery, djq, sidequest)
SETTINGS = ("concurrency", "misfire_grace", "catchup_missed", "max_missed_runs", "queues")
"""The ``Rota`` keywords the examples set, which each test's workers take from them."""

Worker = Callable[[ModuleType], Rota]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def fresh_records(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in EXAMPLES:
        for name, value in list(vars(module).items()):
            if isinstance(value, list):
                monkeypatch.setattr(module, name, list(value))


@pytest.fixture
def worker(tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    """``worker(example)``: one more worker process of the example's service, on the test's
    database and clock, with the example's settings and tasks; the module's own helpers
    (``schedule_digest``, ``remind_at``) use the first one."""
    made: dict[str, list[Rota]] = {}

    def make(example: ModuleType) -> Rota:
        settings = {name: getattr(example.rota.config, name) for name in SETTINGS}
        rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock, **settings)
        for definition in example.rota.registry:
            rota.define_task(definition)
        if example.__name__ not in made:
            monkeypatch.setattr(example, "rota", rota)
        made.setdefault(example.__name__, []).append(rota)
        return rota

    yield make
    for rotas in made.values():
        for rota in rotas:
            rota.close()


def walk(rotas: Sequence[Rota], clock: FakeClock, until: datetime, *names: str) -> None:
    """Move the clock from tick to tick of the named schedules up to ``until``, as they plan
    them, and drain every worker at each: what the workers' schedulers do as time passes."""
    for rota in rotas:
        rota.drain()
    while True:
        planned = [s.next_run_at for s in rotas[0].inspect.schedules() if s.name in names]
        if min(planned) > until:
            return
        assert min(planned) > clock.now(), "a drain at a tick must move the schedule on"
        clock.set(min(planned))
        for rota in rotas:
            rota.drain()


def ticks(rota: Rota, schedule: str) -> list[datetime | None]:
    """The ticks the schedule's jobs were queued for, oldest first."""
    return [job.scheduled_at for job in reversed(rota.find(schedule=schedule, limit=500).jobs)]


def run_to_the_end(rota: Rota, clock: FakeClock, job_id: int) -> tuple[list[float], Job]:
    """Drain the job until it ends, moving the clock to each retry; the seconds it waited before
    each one, and the job."""
    waited: list[float] = []
    while True:
        rota.drain()
        job = rota.job(job_id)
        if job.state is not JobState.PENDING:
            return waited, job
        waited.append((job.run_at - clock.now()).total_seconds())
        clock.set(job.run_at)


def backed_off(waited: list[float], delays: list[float]) -> bool:
    """Whether each wait is its delay, shortened by rota's jitter of at most a quarter."""
    pairs = zip(waited, delays, strict=False)
    return len(waited) == len(delays) and all(0.75 * d <= w <= d for w, d in pairs)


# Celery beat and django-celery-beat


def test_a_beat_crontab_ticks_at_london_times_on_weekdays_across_the_clock_change(
    worker: Worker, clock: FakeClock
) -> None:
    clock.set(utc(2026, 3, 26))  # a Thursday; Britain moves to summer time on Sunday the 29th
    rota = worker(celery)
    walk([rota], clock, utc(2026, 3, 31, 12), "send_sales_report")
    expected = [utc(2026, 3, 26, 7, 30), utc(2026, 3, 27, 7, 30)]  # 07:30 GMT
    expected += [utc(2026, 3, 30, 6, 30), utc(2026, 3, 31, 6, 30)]  # 07:30 BST
    assert celery.reports == expected
    assert ticks(rota, "send_sales_report") == expected


def test_two_workers_queue_one_job_per_tick_through_the_night_the_clocks_change(
    worker: Worker, clock: FakeClock
) -> None:
    """Two beat processes would send every entry twice; two rota workers run each tick once."""
    clock.set(utc(2026, 3, 29))
    workers = [worker(celery), worker(celery)]
    walk(workers, clock, utc(2026, 3, 29, 2), "purge_expired_sessions")
    expected = [utc(2026, 3, 29) + timedelta(minutes=15 * n) for n in range(9)]
    assert celery.purges == expected  # 01:00 UTC is 02:00 BST: no gap, no repeat
    assert ticks(workers[1], "purge_expired_sessions") == expected


def test_connection_errors_are_retried_with_exponential_back_off_and_nothing_else_is(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(celery)

    def partner_down(order_id: int) -> None:
        raise ConnectionError("partner unreachable")

    monkeypatch.setattr(celery, "post_to_partner", partner_down)
    waited, job = run_to_the_end(rota, clock, rota.queue(celery.notify_partner, 42))
    assert backed_off(waited, [5, 10, 20])  # retry_backoff=5: 5 s, 10 s, 20 s
    assert (job.state, job.attempt) == (JobState.FAILED, 4)  # max_retries=3

    def bad_order(order_id: int) -> None:
        raise ValueError(f"no order {order_id}")

    monkeypatch.setattr(celery, "post_to_partner", bad_order)
    waited, job = run_to_the_end(rota, clock, rota.queue(celery.notify_partner, 43))
    assert (waited, job.state, job.attempt) == ([], JobState.FAILED, 1)


def test_the_chain_as_a_workflow_does_not_fetch_again_when_storing_fails(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(celery)
    fetched: list[str] = []
    failures = [ConnectionError("database is down")]
    fetch, store = celery.fetch_feed, celery.store_rows

    def counted_fetch(url: str) -> str:
        fetched.append(url)
        return fetch(url)

    def flaky_store(rows: list[dict[str, str]]) -> int:
        if failures:
            raise failures.pop()
        return store(rows)

    monkeypatch.setattr(celery, "fetch_feed", counted_fetch)
    monkeypatch.setattr(celery, "store_rows", flaky_store)
    job_id = rota.queue(celery.import_feed, "https://example.com/stock.csv")
    waited, job = run_to_the_end(rota, clock, job_id)
    assert (job.state, len(waited), rota.result(job_id)) == (JobState.SUCCEEDED, 1, 2)
    assert fetched == ["https://example.com/stock.csv"]
    assert celery.stored == [{"sku": "A-1", "quantity": "3"}, {"sku": "B-2", "quantity": "5"}]


def test_a_periodic_task_row_becomes_a_schedule_per_account_in_its_own_zone(
    worker: Worker, clock: FakeClock
) -> None:
    clock.set(utc(2026, 3, 6, 12))  # New York moves to summer time on Sunday March 8th
    rota = worker(celery)
    celery.schedule_digest(7, "Europe/London")
    assert celery.schedule_digest(7, "America/New_York") == "digest-7"  # updated, not added
    celery.schedule_digest(8, "Asia/Tokyo")
    walk([rota], clock, utc(2026, 3, 10), "digest-7", "digest-8")
    new_york = [utc(2026, 3, 6, 13), utc(2026, 3, 7, 13), utc(2026, 3, 8, 12), utc(2026, 3, 9, 12)]
    tokyo = [utc(2026, 3, day, 23) for day in (6, 7, 8, 9)]  # 08:00 JST, no summer time
    assert sorted(celery.digests) == sorted([(7, t) for t in new_york] + [(8, t) for t in tokyo])
    assert [s.name for s in rota.inspect.schedules() if s.spec.task == "send_digest"] == [
        "digest-7",
        "digest-8",
    ]


# APScheduler 3


def test_a_cron_job_keeps_berlin_time_and_two_workers_sharing_the_store_run_it_once(
    worker: Worker, clock: FakeClock
) -> None:
    clock.set(utc(2026, 3, 26))  # Germany moves to summer time on Sunday the 29th
    workers = [worker(aps), worker(aps)]
    walk(workers, clock, utc(2026, 3, 31, 12), "export_invoices")
    expected = [utc(2026, 3, 26, 5), utc(2026, 3, 27, 5), utc(2026, 3, 30, 4), utc(2026, 3, 31, 4)]
    assert aps.exports == expected


def test_a_run_later_than_the_misfire_grace_time_is_skipped(
    worker: Worker, clock: FakeClock
) -> None:
    clock.set(utc(2026, 3, 2, 9, 59))
    rota = worker(aps)
    rota.drain()
    clock.set(utc(2026, 3, 2, 10, 4))  # the 10:00 run is 4 minutes late: it runs
    rota.drain()
    clock.set(utc(2026, 3, 2, 10, 35))  # 10:15 is 20 minutes late, 10:30 exactly 5
    rota.drain()
    assert aps.rates == [utc(2026, 3, 2, 10), utc(2026, 3, 2, 10, 30)]


def test_the_error_listener_hears_a_failed_run_which_is_not_retried(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.set(utc(2026, 3, 30, 3, 59))
    rota = worker(aps)
    rota.on("job.failed", aps.on_error)

    def accounting_down() -> None:
        raise ConnectionError("accounting is down")

    monkeypatch.setattr(aps, "export_to_accounting", accounting_down)
    walk([rota], clock, utc(2026, 3, 30, 4), "export_invoices")
    [job] = rota.find(schedule="export_invoices").jobs
    assert (job.state, job.attempt, aps.exports) == (JobState.FAILED, 1, [])
    assert aps.alerts == ["export_invoices failed: accounting is down"]


def test_a_date_job_runs_once_at_its_moment(worker: Worker, clock: FakeClock) -> None:
    clock.set(utc(2026, 3, 31, 12))
    rota = worker(aps)
    when = utc(2026, 4, 1, 7)  # 09:00 in Berlin
    job_id = aps.remind_at(42, when)
    assert aps.remind_at(42, when) == job_id
    rota.drain()
    clock.set(when - timedelta(seconds=1))
    rota.drain()
    assert aps.reminded == []
    clock.set(when)
    rota.drain()
    assert (aps.reminded, rota.job(job_id).state) == ([42], JobState.SUCCEEDED)


# django-q2 and django-rq


def test_a_django_q_cron_schedule_keeps_paris_time_and_returns_its_result(
    worker: Worker, clock: FakeClock
) -> None:
    clock.set(utc(2026, 3, 27))  # France moves to summer time on Sunday the 29th
    rota = worker(djq)
    walk([rota], clock, utc(2026, 3, 30, 12), "close_stale_carts")
    expected = [utc(2026, 3, 27, 2), utc(2026, 3, 28, 2), utc(2026, 3, 29, 1), utc(2026, 3, 30, 1)]
    assert ticks(rota, "close_stale_carts") == expected
    jobs = reversed(rota.find(schedule="close_stale_carts").jobs)
    assert [rota.result(job.id) for job in jobs] == [3, 0, 0, 0]  # django_q.tasks.result


def test_a_failed_django_q_task_is_presented_again_after_the_retry_time_three_times_at_most(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(djq)

    def mail_down(order_id: int) -> None:
        raise ConnectionError("SMTP server is down")

    monkeypatch.setattr(djq, "mail_receipt", mail_down)
    waited, job = run_to_the_end(rota, clock, rota.queue(djq.send_receipt, 7))
    assert backed_off(waited, [120, 120])  # retry=120 each time, not doubling
    assert (job.state, job.attempt) == (JobState.FAILED, 3)  # max_attempts=3


def test_rq_retry_intervals_are_kept_exactly(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(djq)

    def erp_down(order_id: int) -> None:
        raise ConnectionError("ERP is down")

    monkeypatch.setattr(djq, "push_to_erp", erp_down)
    waited, job = run_to_the_end(rota, clock, rota.queue(djq.sync_order, 9))
    assert waited == [10, 30, 60]  # Retry(max=3, interval=[10, 30, 60])
    assert (job.state, job.attempt) == (JobState.FAILED, 4)
    assert "ConnectionError: ERP is down" in job.errors[-1].traceback


def test_a_reminder_is_queued_once_per_order_while_it_waits(
    worker: Worker, clock: FakeClock
) -> None:
    rota = worker(djq)
    first = rota.queue(djq.send_reminder, 5, delay=timedelta(minutes=30))  # enqueue_in
    assert rota.queue(djq.send_reminder, 5, delay=timedelta(minutes=30)) == first
    other = rota.queue(djq.send_reminder, 6, delay=timedelta(minutes=30))
    assert other != first
    rota.drain()
    assert djq.reminded == []
    clock.advance(timedelta(minutes=30))
    rota.drain()
    assert sorted(djq.reminded) == [5, 6]
    assert rota.queue(djq.send_reminder, 5) not in (first, other)  # its job ended: a new one


# Sidequest.js


def test_a_sidequest_schedule_runs_once_a_day_at_seven_in_new_york_with_two_workers(
    worker: Worker, clock: FakeClock
) -> None:
    """Sidequest's schedules live in each process, hence its advice of a unique period."""
    clock.set(utc(2026, 3, 6))  # New York moves to summer time on Sunday March 8th
    workers = [worker(sidequest), worker(sidequest)]
    walk(workers, clock, utc(2026, 3, 10), "daily_digest")
    expected = [utc(2026, 3, 6, 12), utc(2026, 3, 7, 12), utc(2026, 3, 8, 11), utc(2026, 3, 9, 11)]
    assert sidequest.digests == expected
    assert {job.queue for job in workers[0].find(schedule="daily_digest").jobs} == {"mail"}


def test_fail_snooze_and_a_returned_value_end_a_job_as_sidequest_would(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(sidequest)
    unknown = rota.queue(sidequest.send_welcome_email, 99)
    rota.drain()
    job = rota.job(unknown)
    assert (job.state, job.attempt, job.errors[-1].code) == (
        JobState.FAILED,
        1,
        ErrorCode.FAILED_BY_HANDLER,
    )
    monkeypatch.setattr(sidequest.mailer, "busy", True)
    job_id = rota.queue(sidequest.send_welcome_email, 42)
    assert rota.queue(sidequest.send_welcome_email, 42) == job_id  # unique({ withArgs: true })
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.attempt, job.run_at) == (
        JobState.PENDING,
        0,
        clock.now() + timedelta(seconds=60),
    )
    monkeypatch.setattr(sidequest.mailer, "busy", False)
    clock.advance(60)
    rota.drain()
    assert (rota.result(job_id), rota.job(job_id).attempt) == ({"sent": "ada@example.com"}, 1)
    assert sidequest.sent == ["ada@example.com"]


def test_sidequest_back_off_is_kept_from_retry_delay_and_max_attempts(
    worker: Worker, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = worker(sidequest)

    def provider_down(to: str) -> None:
        raise ConnectionError("mail provider is down")

    monkeypatch.setattr(sidequest.mailer, "send", provider_down)
    waited, job = run_to_the_end(rota, clock, rota.queue(sidequest.send_welcome_email, 42))
    assert backed_off(waited, [2, 4, 8, 16])  # retryDelay(2000), exponential
    assert (job.state, job.attempt) == (JobState.FAILED, 5)  # maxAttempts(5)
