"""The shop's tasks, found by rota's app when Django starts (every app's ``tasks.py``).

Handlers are idempotent, as every rota handler must be (a job runs at least once): confirming
a confirmed order, or cancelling a cancelled one, changes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F

from orders.models import Order, Product
from rota import JobContext
from rota.contrib.django import rota

STALE_AFTER = timedelta(hours=1)


@rota.task(retries=5)
def confirm_order(ctx: JobContext, order_id: int) -> str:
    """Confirm a placed order (where a real shop would charge the card and send the mail)."""
    updated = Order.objects.filter(id=order_id, status=Order.PLACED).update(status=Order.CONFIRMED)
    ctx.logger.info("order %s: %s", order_id, "confirmed" if updated else "already done")
    return str(Order.objects.get(id=order_id).status)


@rota.task(cron="*/15 * * * *")
def cancel_stale_orders(ctx: JobContext) -> int:
    """Every quarter of an hour: orders placed over an hour before the tick and still not
    confirmed are cancelled, their stock returned. The tick's time (``ctx.scheduled_at``), not
    the clock's, so a late or repeated run cancels the same orders."""
    assert ctx.scheduled_at is not None  # a schedule's job always has its tick
    cutoff = ctx.scheduled_at - STALE_AFTER
    cancelled = 0
    with transaction.atomic():
        stale = Order.objects.select_for_update().filter(status=Order.PLACED, placed_at__lt=cutoff)
        for order in stale:
            Product.objects.filter(id=order.product_id).update(stock=F("stock") + order.quantity)
            order.status = Order.CANCELLED
            order.save(update_fields=["status"])
            cancelled += 1
    return cancelled
