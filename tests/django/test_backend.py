"""``RotaBackend`` behaves as Django's task backend tests expect of a backend that defers work
and keeps results (their ``DummyBackend`` and ``ImmediateBackend`` tests, and those of
``Task``), with a real worker (``drain``) in between: enqueue, results and their status, return
values and errors, context, priority, ``run_after``, queues and transactions. On SQLite,
MariaDB and PostgreSQL; on Django 6 (``scripts/test-django6``) and the backport."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction

from rota.contrib.django import DjangoRota
from rota.contrib.django.backend_api import (
    Task,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    task_backends,
)
from rota.testing import FakeClock
from tests.django import backend_tasks as tasks
from tests.django.backend_setup import rota_backend
from tests.django.conftest import on

BACKENDS = on("sqlite", "mariadb", "postgres")


@pytest.fixture
def rota(make_rota: Callable[..., DjangoRota], alias: str) -> Iterator[DjangoRota]:
    with rota_backend(make_rota, alias) as made:
        yield made


@pytest.mark.parametrize("alias", BACKENDS)
@pytest.mark.parametrize("task", [tasks.echo, tasks.echo_async], ids=["sync", "async"])
def test_an_enqueued_task_is_ready_then_successful_once_a_worker_ran_it(
    rota: DjangoRota, task: Task[..., Any]
) -> None:
    result = task.enqueue(1, (2, 3), two={"b": b"x"})
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished
    assert result.args == [1, [2, 3]]  # normalised as Django's backends do
    assert result.kwargs == {"two": {"b": "x"}}
    assert result.attempts == 0
    assert result.task == task
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value
    assert rota.job(int(result.id)).task == task.module_path

    assert rota.drain().succeeded == 1
    assert result.status == TaskResultStatus.READY  # a result is a snapshot...
    result.refresh()  # ...until refreshed
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished
    assert result.return_value == {"args": [1, [2, 3]], "kwargs": {"two": {"b": "x"}}}
    assert result.attempts == 1
    assert result.errors == []
    assert result.enqueued_at is not None and result.started_at is not None
    assert result.finished_at is not None
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert task.get_result(result.id) == result


@pytest.mark.parametrize("alias", BACKENDS)
def test_aenqueue_and_aget_result(rota: DjangoRota) -> None:
    async def use() -> None:
        result = await tasks.meaning_of_life.aenqueue()
        assert result.status == TaskResultStatus.READY
        assert (await rota.adrain()).succeeded == 1
        found = await tasks.meaning_of_life.aget_result(result.id)
        assert (found.status, found.return_value) == (TaskResultStatus.SUCCESSFUL, 42)
        await result.arefresh()
        assert result.return_value == 42
        with pytest.raises(TaskResultDoesNotExist):
            await tasks.echo.aget_result("999999")

    asyncio.run(use())


@pytest.mark.parametrize("alias", BACKENDS)
@pytest.mark.parametrize(
    ("task", "exception", "message"),
    [
        (tasks.fails, ValueError, "it failed on purpose"),
        (tasks.exits, SystemExit, "it exited on purpose"),
    ],
    ids=["exception", "system-exit"],
)
def test_a_task_that_raises_fails_with_its_exception_and_traceback(
    rota: DjangoRota, task: Task[..., Any], exception: type[BaseException], message: str
) -> None:
    result = task.enqueue()
    assert rota.drain().failed == 1
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.is_finished
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    assert result.attempts == 1  # RETRIES is 0 by default: Django's tasks are not retried
    [error] = result.errors
    assert error.exception_class is exception
    assert error.traceback.endswith(f"{exception.__name__}: {message}\n"), error.traceback
    assert result.started_at is not None and result.finished_at is not None
    assert result.started_at <= result.finished_at


@pytest.mark.parametrize("alias", on("sqlite"))
def test_an_exception_of_an_exception_and_a_value_json_cannot_hold(rota: DjangoRota) -> None:
    nested, unreturnable = tasks.fails_nested.enqueue(), tasks.returns_a_function.enqueue()
    assert rota.drain().failed == 2
    nested.refresh()
    assert nested.errors[0].exception_class is ValueError
    assert 'ValueError(ValueError("the inner one"))' in nested.errors[0].traceback
    unreturnable.refresh()
    assert unreturnable.status == TaskResultStatus.FAILED
    assert unreturnable.errors[0].exception_class is TypeError
    assert "Unsupported type" in unreturnable.errors[0].traceback


@pytest.mark.parametrize("alias", on("sqlite"))
def test_retries_give_an_error_per_failed_attempt(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    with rota_backend(make_rota, alias, RETRIES=1) as rota:
        result = tasks.fails.enqueue()
        assert rota.drain().retried == 1
        result.refresh()
        assert (result.status, result.attempts) == (TaskResultStatus.READY, 1)
        assert isinstance(rota.clock, FakeClock)
        rota.clock.advance(timedelta(hours=1))  # past the retry's back-off
        assert rota.drain().failed == 1
        result.refresh()
        assert (result.status, result.attempts, len(result.errors)) == ("FAILED", 2, 2)


@pytest.mark.parametrize("alias", BACKENDS)
@pytest.mark.parametrize("task", [tasks.own_id, tasks.own_id_async], ids=["sync", "async"])
def test_a_task_taking_context_gets_its_running_result(
    rota: DjangoRota, task: Task[..., Any]
) -> None:
    result = task.enqueue()
    assert rota.drain().succeeded == 1
    own_id, attempt, status, worker_ids = task.get_result(result.id).return_value
    assert (own_id, attempt, status) == (result.id, 1, "RUNNING")
    assert len(worker_ids) == 1 and worker_ids[0]  # the worker running it


@pytest.mark.parametrize("alias", BACKENDS)
def test_get_result_of_an_unknown_id_or_another_task(rota: DjangoRota) -> None:
    @rota.task
    def plain() -> None: ...

    backend = task_backends["default"]
    for unknown in ["999999", "abc", "-1", str(rota.queue(plain))]:
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(unknown)
    result = tasks.echo.enqueue()
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        tasks.meaning_of_life.get_result(result.id)


@pytest.mark.parametrize("alias", BACKENDS)
def test_higher_django_priorities_run_first(rota: DjangoRota) -> None:
    for priority in [-100, 0, 100, -5, 7]:
        tasks.record.using(priority=priority).enqueue(str(priority))
    assert rota.drain().succeeded == 5
    assert tasks.ran == ["100", "7", "0", "-5", "-100"]
    result = tasks.record.using(priority=30).enqueue("again")
    assert rota.job(int(result.id)).priority == -30
    assert tasks.record.get_result(result.id).task.priority == 30


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_task_runs_after_its_run_after(rota: DjangoRota) -> None:
    assert isinstance(rota.clock, FakeClock)
    later = rota.clock.now() + timedelta(minutes=30)
    result = tasks.meaning_of_life.using(run_after=later).enqueue()
    assert rota.drain().succeeded == 0
    assert tasks.meaning_of_life.get_result(result.id).status == TaskResultStatus.READY
    assert tasks.meaning_of_life.get_result(result.id).task.run_after == later
    rota.clock.advance(timedelta(minutes=30))
    assert rota.drain().succeeded == 1
    assert tasks.meaning_of_life.get_result(result.id).return_value == 42


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_task_goes_to_its_queue(rota: DjangoRota) -> None:
    result = tasks.meaning_of_life.using(queue_name="mail").enqueue()
    assert rota.job(int(result.id)).queue == "mail"
    assert rota.drain(queue="default").succeeded == 0
    assert rota.drain(queue="mail").succeeded == 1
    found = tasks.meaning_of_life.get_result(result.id)
    assert (found.task.queue_name, found.return_value) == ("mail", 42)


@pytest.mark.parametrize("alias", BACKENDS)
def test_enqueue_in_a_transaction_exists_only_if_it_commits(rota: DjangoRota, alias: str) -> None:
    class Refused(Exception):
        pass

    enqueued: list[str] = []

    def enqueue_then_refuse() -> None:
        with transaction.atomic(using=alias):
            enqueued.append(tasks.meaning_of_life.enqueue().id)
            raise Refused

    with pytest.raises(Refused):
        enqueue_then_refuse()
    with pytest.raises(TaskResultDoesNotExist):
        tasks.meaning_of_life.get_result(enqueued[0])
    with transaction.atomic(using=alias):
        committed = tasks.meaning_of_life.enqueue()
    assert rota.drain().succeeded == 1  # the committed job only
    assert tasks.meaning_of_life.get_result(committed.id).return_value == 42


@pytest.mark.parametrize("alias", on("sqlite"))
def test_a_paused_job_is_ready_and_a_cancelled_one_failed(rota: DjangoRota) -> None:
    paused, cancelled = tasks.meaning_of_life.enqueue(), tasks.meaning_of_life.enqueue()
    assert rota.pause(int(paused.id)) and rota.cancel(int(cancelled.id))
    assert tasks.meaning_of_life.get_result(paused.id).status == TaskResultStatus.READY
    found = tasks.meaning_of_life.get_result(cancelled.id)
    assert (found.status, found.is_finished) == (TaskResultStatus.FAILED, True)
