"""A shop's jobs moved from django-q2 and django-rq (with rq-scheduler) to rota: django-q2's
cron schedule and its broker-level retries, rq's ``Retry(max=3, interval=[10, 30, 60])``, a
reminder queued for later that must not be queued twice, and a result read back.

In a Django project, take the project's ``Rota`` instead of making one:
``from rota.contrib.django import rota``. The functions the handlers call stand in for the real
work: each records what it was asked to do, so that a test sees what ran.
"""

from __future__ import annotations

from rota import JobContext, Retry, Rota

rota = Rota()  # $ROTA_DATABASE_URL, else sqlite:///rota.db

receipts: list[int] = []
pushed: list[int] = []
reminded: list[int] = []
stale_carts = [101, 102, 103]


def mail_receipt(order_id: int) -> None:
    receipts.append(order_id)


def push_to_erp(order_id: int) -> None:
    pushed.append(order_id)


# django-q2: Q_CLUSTER = {"timeout": 60, "retry": 120, "max_attempts": 3}: an attempt that
# fails is presented again 120 s later, 3 attempts at most.
@rota.task(timeout=60, retries=2, retry_delay=120, retry_cap=120)
def send_receipt(ctx: JobContext, order_id: int) -> None:
    mail_receipt(order_id)


# django-q2: schedule("shop.tasks.close_stale_carts", schedule_type=Schedule.CRON,
# cron="0 3 * * *"), in the project's TIME_ZONE.
@rota.task(cron="0 3 * * *", tz="Europe/Paris", retries=0)
def close_stale_carts() -> int:
    closed = len(stale_carts)
    stale_carts.clear()
    return closed


# rq: queue.enqueue(sync_order, order_id, retry=Retry(max=3, interval=[10, 30, 60]),
# job_timeout=300)
INTERVALS = (10, 30, 60)


@rota.task(timeout=300, retries=len(INTERVALS))
def sync_order(ctx: JobContext, order_id: int) -> None:
    try:
        push_to_erp(order_id)
    except Exception as error:
        raise Retry(delay=INTERVALS[min(ctx.attempt, len(INTERVALS)) - 1]) from error


# rq: queue.enqueue_in(timedelta(minutes=30), send_reminder, order_id), at most one waiting
# per order.
@rota.task(unique=True)
def send_reminder(ctx: JobContext, order_id: int) -> None:
    reminded.append(order_id)
