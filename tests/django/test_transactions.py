"""A job queued inside ``transaction.atomic()`` is written by Django's own connection, in that
transaction: it exists only if the transaction commits. Outside one it is committed at once.
On SQLite, MariaDB (mysqlclient, Django's driver) and PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from django.db import connections, transaction
from sqlalchemy import create_engine, text

from rota import Enqueue, JobContext, JobState
from rota.contrib.django import DjangoRota
from rota.store.urls import normalise_url
from tests.django.conftest import on
from tests.django.shop.models import Order

BACKENDS = on("sqlite", "mariadb", "postgres")


class Refused(Exception):
    """What makes the tests' transactions roll back."""


def visible(rota: DjangoRota, *jobs: int) -> int:
    """How many of ``jobs`` a connection of neither Django nor the Rota sees.

    Not through the Rota: on SQLite each of its transactions takes the write lock first, which
    Django's transaction holds until it ends."""
    engine = create_engine(normalise_url(rota.config.url))
    try:
        with engine.connect() as connection:
            ids = ", ".join(str(int(job)) for job in jobs)
            table = f"{rota.config.table_prefix}jobs"
            query = text(f"SELECT COUNT(*) FROM {table} WHERE id IN ({ids})")
            count: int = connection.execute(query).scalar_one()
            return count
    finally:
        engine.dispose()


def shop(make_rota: Callable[..., DjangoRota], alias: str) -> DjangoRota:
    """A Rota with a task, its schema made before any transaction of Django's starts (on
    SQLite, rota's own connection would wait for Django's write lock)."""
    rota = make_rota(alias)

    @rota.task(name="ship")
    def ship(ctx: JobContext, order: int) -> int:
        return int(Order.objects.using(alias).filter(id=order).count())

    rota.jobs()
    return rota


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_job_queued_in_a_transaction_exists_once_it_commits(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)
    with transaction.atomic(using=alias):
        order = Order.objects.using(alias).create(reference="A-1")
        job = rota.queue("ship", order.id)
        after, unique = rota.queue_many(
            [Enqueue("ship", order.id, depends_on=[job]), Enqueue("ship", 0, unique_key="k")]
        )
        assert visible(rota, job, after, unique) == 0
        # Django's transaction goes on after rota wrote in it: nothing of rota's ended it.
        Order.objects.using(alias).create(reference="A-2")
        assert connections[alias].in_atomic_block
    assert visible(rota, job, after, unique) == 3
    assert rota.job(after).depends_on == (job,)
    assert rota.drain().succeeded == 3
    assert rota.result(job) == 1  # the order the transaction wrote beside it


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_job_queued_in_a_transaction_rolled_back_never_was(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)
    jobs: list[int] = []

    def refused() -> None:
        with transaction.atomic(using=alias):
            order = Order.objects.using(alias).create(reference="B-1")
            jobs.append(rota.queue("ship", order.id))
            jobs.extend(rota.queue_many([Enqueue("ship", order.id)]))
            raise Refused

    with pytest.raises(Refused):
        refused()
    assert len(jobs) == 2
    assert visible(rota, *jobs) == 0
    assert not Order.objects.using(alias).exists()
    assert rota.counts().by_state.get(JobState.PENDING, 0) == 0


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_savepoint_rolled_back_takes_its_job_with_it(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)
    dropped: list[int] = []

    def refused() -> None:
        with transaction.atomic(using=alias):
            dropped.append(rota.queue("ship", 2))
            raise Refused

    with transaction.atomic(using=alias):
        kept = rota.queue("ship", 1)
        with pytest.raises(Refused):
            refused()
    assert visible(rota, kept) == 1
    assert visible(rota, *dropped) == 0


@pytest.mark.parametrize("alias", BACKENDS)
def test_outside_a_transaction_a_job_is_committed_at_once(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = shop(make_rota, alias)
    job = rota.queue("ship", 7)
    assert not connections[alias].in_atomic_block
    assert visible(rota, job) == 1
    with connections[alias].cursor() as cursor:  # Django's own connection sees it too
        cursor.execute(f"SELECT COUNT(*) FROM {rota.config.table_prefix}jobs WHERE id = {job}")
        assert cursor.fetchone()[0] == 1


@pytest.mark.parametrize("alias", on("sqlite"))
def test_a_transaction_broken_by_an_error_is_refused_as_django_refuses_it(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    from django.db import IntegrityError
    from django.db.transaction import TransactionManagementError

    rota = shop(make_rota, alias)
    with transaction.atomic(using=alias):
        Order.objects.using(alias).create(id=1, reference="C-1")
        with contextlib.suppress(IntegrityError):  # outside a savepoint: it breaks the transaction
            Order.objects.using(alias).create(id=1, reference="C-1")
        with pytest.raises(TransactionManagementError):
            rota.queue("ship", 1)
        transaction.set_rollback(True, using=alias)
