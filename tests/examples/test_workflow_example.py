"""The order pipeline of docs/workflows.md (``examples/workflows/orders.py``) runs as the page
says, in virtual time: each side effect happens once, across a failed attempt, a wait for the
warehouse's signal and a three-day sleep; an order the warehouse never ships is refunded when
the two-day wait times out."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest

from rota import JobState, Rota
from rota.testing import FakeClock

pytestmark = pytest.mark.sqlite_only
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "orders.py"


@pytest.fixture
def orders() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("orders_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["orders_example"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["orders_example"]


@pytest.fixture
def shop(rota: Rota, orders: ModuleType) -> Rota:
    """The example's task on the test's own ``Rota`` (its database and fake clock)."""
    rota.task(name="fulfil_order", retries=5)(orders.fulfil_order)
    return rota


def wake_timed_out(rota: Rota) -> None:
    """What a worker's rescue loop does each poll."""
    rota.store.workflow.wake_timed_out(rota.clock.now(), 100)


def test_an_order_is_charged_once_shipped_and_reviewed(
    shop: Rota, orders: ModuleType, clock: FakeClock
) -> None:
    job_id = shop.queue("fulfil_order", order_id=1234, amount=4990, unique_key="order-1234")
    shop.drain()
    assert shop.job(job_id).state is JobState.WAITING
    clock.advance(timedelta(hours=20))
    assert shop.signal("order-1234", "shipped", {"tracking": "1Z999"})
    shop.drain()
    job = shop.job(job_id)
    assert (job.state, job.run_at) == (JobState.PENDING, clock.now() + timedelta(days=3))
    clock.advance(timedelta(days=3))
    shop.drain()
    assert (shop.job(job_id).state, shop.result(job_id)) == (JobState.SUCCEEDED, "reviewed")
    assert orders.CHARGES == [(1234, 4990)]
    assert orders.EMAILS == [(1234, "1Z999")]
    assert orders.REFUNDS == []
    names = [step.name for step in shop.steps(job_id)]
    assert names == ["charge", "wait_for:shipped", "before-review", "review-email"]


def test_a_failure_after_the_charge_does_not_charge_again(
    shop: Rota, orders: ModuleType, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = shop.queue("fulfil_order", order_id=7, amount=100)
    assert shop.signal(job_id, "shipped", {"tracking": "T7"}), "sent before the wait: kept"
    failures = iter([ConnectionError("the mail server is down")])
    original = orders.send_review_request

    def flaky_mail(order_id: int, tracking: str) -> None:
        error = next(failures, None)
        if error is not None:
            raise error
        original(order_id, tracking)

    monkeypatch.setattr(orders, "send_review_request", flaky_mail)
    shop.drain()
    clock.advance(timedelta(days=3))
    shop.drain()
    job = shop.job(job_id)
    assert (job.state, job.errors[-1].message) == (JobState.PENDING, "the mail server is down")
    clock.advance(job.run_at - clock.now())
    shop.drain()
    assert shop.result(job_id) == "reviewed"
    assert (orders.CHARGES, orders.EMAILS) == ([(7, 100)], [(7, "T7")])


def test_an_order_never_shipped_is_refunded_after_two_days(
    shop: Rota, orders: ModuleType, clock: FakeClock
) -> None:
    job_id = shop.queue("fulfil_order", order_id=9, amount=500)
    shop.drain()
    clock.advance(timedelta(days=2))
    wake_timed_out(shop)
    shop.drain()
    assert shop.result(job_id) == "refunded"
    assert (orders.CHARGES, orders.REFUNDS, orders.EMAILS) == ([(9, 500)], ["ch_9"], [])
