"""An order pipeline as a durable workflow: charge the card, wait for the warehouse to say the
parcel shipped, wait three days, then ask for a review. Each step runs once per order however
often the job runs again; the waits hold no worker.

    rota.queue(fulfil_order, order_id=1234, amount=4_990, unique_key="order-1234")
    ...                                             # later, from the warehouse's webhook:
    rota.signal("order-1234", "shipped", {"tracking": "1Z999"})
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rota import JobContext, Rota

rota = Rota()  # $ROTA_DATABASE_URL, else sqlite:///rota.db

# Stand-ins for a payment provider and a mailer: each call is a side effect that must not
# happen twice.
CHARGES: list[tuple[int, int]] = []
REFUNDS: list[str] = []
EMAILS: list[tuple[int, str]] = []


def charge_card(order_id: int, amount: int) -> dict[str, Any]:
    CHARGES.append((order_id, amount))
    return {"charge": f"ch_{order_id}", "amount": amount}


def refund(charge: str) -> None:
    REFUNDS.append(charge)


def send_review_request(order_id: int, tracking: str) -> None:
    EMAILS.append((order_id, tracking))


@rota.task(retries=5)
def fulfil_order(ctx: JobContext, order_id: int, amount: int) -> str:
    receipt = ctx.step("charge", charge_card, order_id, amount)
    shipped = ctx.wait_for("shipped", timeout=timedelta(days=2))
    if shipped is None:  # the warehouse never answered: give the money back
        ctx.step("refund", refund, receipt["charge"])
        return "refunded"
    ctx.sleep("before-review", timedelta(days=3))
    ctx.step("review-email", send_review_request, order_id, shipped["tracking"])
    return "reviewed"
