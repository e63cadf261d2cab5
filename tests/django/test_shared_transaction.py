"""Inside a transaction of Django's on rota's database, every call of the Rota goes through
Django's connection: reads find the jobs the transaction queued (a view under
``ATOMIC_REQUESTS``), without waiting for its lock on SQLite, and ``drain()`` runs them in it,
its handlers on that connection too (a ``TestCase``). On SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from django.db import connections, transaction

from rota import JobContext, JobState
from rota.contrib.django import DjangoRota
from rota.contrib.django.backend_api import TaskResultDoesNotExist, TaskResultStatus
from rota.errors import JobNotFound
from tests.django import backend_tasks as tasks
from tests.django.backend_setup import rota_backend
from tests.django.conftest import on
from tests.django.shop.models import Order

BACKENDS = on("sqlite", "mariadb", "postgres")


class Rollback(Exception):
    """Ends a test's transaction as a ``TestCase`` ends each test's."""


def shop(make_rota: Callable[..., DjangoRota], alias: str) -> DjangoRota:
    rota = make_rota(alias)

    @rota.task(name="pay")
    def pay(ctx: JobContext, order: int) -> int:
        """Reads and writes the order through Django's connection of its own thread."""
        Order.objects.using(alias).filter(id=order).update(reference="paid")
        return int(Order.objects.using(alias).filter(reference="paid").count())

    rota.prepare()  # as a test database's creation does, before any test's transaction
    return rota


@pytest.fixture
def backend(make_rota: Callable[..., DjangoRota], alias: str) -> Iterator[DjangoRota]:
    with rota_backend(make_rota, alias) as made:
        yield made


@pytest.mark.parametrize("alias", BACKENDS)
def test_drain_in_a_tests_transaction_runs_the_job_in_it(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)

    @transaction.atomic(using=alias)
    def a_test() -> int:
        order = Order.objects.using(alias).create(reference="new")
        job = rota.queue("pay", order.id)
        assert rota.drain().succeeded == 1
        done = rota.job(job)
        assert done.state is JobState.SUCCEEDED
        assert done.result == 1  # the handler saw the order the transaction made
        assert Order.objects.using(alias).get(id=order.id).reference == "paid"
        assert connections[alias].in_atomic_block
        raise Rollback(job)

    with pytest.raises(Rollback) as ended:
        a_test()
    job = ended.value.args[0]
    with pytest.raises(JobNotFound):  # rolled back with the test, job and order alike
        rota.job(job)
    assert not Order.objects.using(alias).exists()
    assert rota.drain().succeeded == 0


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_failing_handler_in_a_tests_transaction_leaves_it_usable(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = make_rota(alias)

    @rota.task(retries=0)
    def broken(ctx: JobContext) -> None:
        raise ValueError("no")

    rota.prepare()

    @transaction.atomic(using=alias)
    def a_test() -> None:
        job = rota.queue(broken)
        assert rota.drain().failed == 1
        assert rota.job(job).errors[0].type.endswith("ValueError")
        Order.objects.using(alias).create(reference="after")  # the transaction goes on
        raise Rollback

    with pytest.raises(Rollback):
        a_test()


@pytest.mark.parametrize("alias", BACKENDS)
def test_get_result_in_the_enqueuing_transaction_finds_it_at_once(
    backend: DjangoRota, alias: str
) -> None:

    @transaction.atomic(using=alias)
    def a_view() -> None:
        started = time.monotonic()
        result = tasks.meaning_of_life.enqueue()
        again = tasks.meaning_of_life.get_result(result.id)
        assert again.status == TaskResultStatus.READY
        assert again.id == result.id
        assert time.monotonic() - started < 10  # SQLite waited for its own lock, 60 s
        assert backend.drain().succeeded == 1
        result.refresh()
        assert result.return_value == 42
        raise Rollback(result.id)

    with pytest.raises(Rollback) as ended:
        a_view()
    with pytest.raises(TaskResultDoesNotExist):
        tasks.meaning_of_life.get_result(ended.value.args[0])


@pytest.mark.parametrize("alias", on("sqlite"))
def test_outside_a_transaction_rota_uses_its_own_connection(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)
    assert rota._loan() is None
    with transaction.atomic(using=alias):
        loan = rota._loan()
        assert loan is not None and loan.connection is connections[alias].connection
