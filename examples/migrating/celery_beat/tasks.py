"""A reports service moved from Celery beat and django-celery-beat to rota: two beat entries as
cron tasks, one schedule per account where django-celery-beat kept a PeriodicTask row, a task
retried with exponential back-off on connection errors, and a chain of three tasks as one
workflow job whose finished steps are not run again.

The functions the handlers call stand in for the real work (a partner's API, a feed, a mailer):
each records what it was asked to do, so that a test sees what ran and for which tick.
"""

from __future__ import annotations

from datetime import datetime

from rota import JobContext, Rota

rota = Rota()  # $ROTA_DATABASE_URL, else sqlite:///rota.db

reports: list[datetime | None] = []
purges: list[datetime | None] = []
digests: list[tuple[int, datetime | None]] = []
notified: list[int] = []
stored: list[dict[str, str]] = []


def post_to_partner(order_id: int) -> None:
    notified.append(order_id)


def fetch_feed(url: str) -> str:
    return "sku,quantity\nA-1,3\nB-2,5"


def parse_feed(raw: str) -> list[dict[str, str]]:
    header, *lines = raw.splitlines()
    return [dict(zip(header.split(","), line.split(","), strict=True)) for line in lines]


def store_rows(rows: list[dict[str, str]]) -> int:
    stored.extend(rows)
    return len(rows)


# beat_schedule "weekday-sales-report": crontab(hour=7, minute=30, day_of_week="mon-fri"),
# in the app's timezone, Europe/London.
@rota.task(cron="30 7 * * mon-fri", tz="Europe/London")
def send_sales_report(ctx: JobContext) -> None:
    reports.append(ctx.scheduled_at)


# beat_schedule "purge-expired-sessions": crontab(minute="*/15").
@rota.task(cron="*/15 * * * *", tz="Europe/London")
def purge_expired_sessions(ctx: JobContext) -> None:
    purges.append(ctx.scheduled_at)


# autoretry_for=(ConnectionError,), retry_backoff=5, retry_backoff_max=600, max_retries=3
@rota.task(retries=3, retry_delay=5, retry_cap=600, retry_on=(ConnectionError,))
def notify_partner(ctx: JobContext, order_id: int) -> None:
    post_to_partner(order_id)


# chain(fetch_feed.s(url), parse_feed.s(), store_rows.s()): each result feeds the next step.
@rota.task(retries=3)
def import_feed(ctx: JobContext, url: str) -> int:
    raw = ctx.step("fetch", fetch_feed, url)
    rows = ctx.step("parse", parse_feed, raw)
    stored: int = ctx.step("store", store_rows, rows)
    return stored


@rota.task
def send_digest(ctx: JobContext, account_id: int) -> None:
    digests.append((account_id, ctx.scheduled_at))


def schedule_digest(account_id: int, tz: str) -> str:
    """The PeriodicTask row django-celery-beat kept for each account: a schedule persisted in
    the database, named after the account, so that calling this again updates it."""
    return rota.schedule(
        "0 8 * * *", send_digest, name=f"digest-{account_id}", tz=tz, args=[account_id]
    )
