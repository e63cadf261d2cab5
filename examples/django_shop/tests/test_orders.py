"""Placing orders: the confirmation job exists only if the order's transaction commits, the
worker confirms the order, and the quarter-hourly task cancels the stale ones at its tick."""

from __future__ import annotations

from datetime import timedelta

from conftest import Browser
from orders.models import Order, Product
from rota import JobState
from rota.contrib.django import DjangoRota
from rota.testing import FakeClock


def confirmations(rota: DjangoRota) -> dict[str, int]:
    return dict(rota.counts().by_task.get("orders.tasks.confirm_order", {}))


def test_an_order_placed_is_confirmed_by_its_job(rota: DjangoRota, browser: Browser) -> None:
    product = Product.objects.create(name="kettle", stock=3)
    assert "kettle (3 left)" in browser.get("/orders/").text
    response = browser.post("/orders/", data={"product": product.id, "quantity": 2})
    assert response.status_code == 201
    placed = response.json()
    assert rota.job(placed["job"]).state is JobState.PENDING
    assert Order.objects.get(id=placed["order"]).status == Order.PLACED

    assert rota.drain().succeeded == 1
    assert rota.result(placed["job"]) == Order.CONFIRMED
    assert browser.get(f"/orders/{placed['order']}/").json()["status"] == Order.CONFIRMED
    assert Product.objects.get(id=product.id).stock == 1


def test_an_order_refused_after_its_job_was_queued_leaves_no_job(
    rota: DjangoRota, browser: Browser
) -> None:
    product = Product.objects.create(name="kettle", stock=1)
    before = confirmations(rota)
    browser.get("/orders/")
    response = browser.post("/orders/", data={"product": product.id, "quantity": 2})
    assert response.status_code == 409
    assert response.json() == {"error": "only 1 of kettle left"}
    assert not Order.objects.exists()
    assert confirmations(rota) == before  # the job went with the rollback
    assert rota.drain().succeeded == 0
    assert Product.objects.get(id=product.id).stock == 1


def test_stale_orders_are_cancelled_at_the_next_tick(rota: DjangoRota, clock: FakeClock) -> None:
    product = Product.objects.create(name="kettle", stock=0)
    (schedule,) = [line for line in rota.jobs() if line.name == "orders.tasks.cancel_stale_orders"]
    assert schedule.cron == "*/15 * * * *"
    assert schedule.next_run is not None
    tick = schedule.next_run
    stale = Order.objects.create(product=product, quantity=2, placed_at=tick - timedelta(hours=2))
    fresh = Order.objects.create(product=product, quantity=1, placed_at=tick - timedelta(minutes=5))

    clock.set(tick - timedelta(seconds=1))
    assert rota.drain().succeeded == 0  # not yet its time
    assert Order.objects.get(id=stale.id).status == Order.PLACED

    clock.set(tick)
    assert rota.drain().succeeded == 1
    assert Order.objects.get(id=stale.id).status == Order.CANCELLED
    assert Order.objects.get(id=fresh.id).status == Order.PLACED
    assert Product.objects.get(id=product.id).stock == 2  # the stale order's, returned
