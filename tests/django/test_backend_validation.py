"""What ``RotaBackend`` refuses, and says it supports, as Django's task tests expect: arguments
JSON cannot hold, priorities, ``run_after``, queues, functions; its own options; the
``task_enqueued`` signal. A refused task writes no job."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from rota.contrib.django import DjangoRota, project
from rota.contrib.django.backend_api import (
    InvalidTask,
    TaskResult,
    task,
    task_backends,
    task_enqueued,
)
from rota.contrib.django.connections import RequestTask
from tests.django import backend_tasks as tasks
from tests.django.backend_setup import rota_backend, tasks_setting
from tests.django.conftest import on

SQLITE = on("sqlite")


@pytest.fixture
def rota(make_rota: Callable[..., DjangoRota], alias: str) -> Iterator[DjangoRota]:
    with rota_backend(make_rota, alias) as made:
        yield made


def jobs(rota: DjangoRota) -> int:
    return sum(rota.counts().by_state.values())


@pytest.mark.parametrize("alias", SQLITE)
def test_it_says_what_it_supports(rota: DjangoRota) -> None:
    backend = task_backends["default"]
    assert type(backend).__name__ == "RotaBackend"
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority
    assert list(backend.check()) == []


@pytest.mark.parametrize("alias", SQLITE)
def test_arguments_json_cannot_hold_are_djangos_type_error(rota: DjangoRota) -> None:
    with pytest.raises(TypeError, match=re.escape("Unsupported type: <class 'datetime.datetime'>")):
        tasks.echo.enqueue(datetime.now())
    with pytest.raises(TypeError, match=re.escape("Unsupported type: <class 'object'>")):
        tasks.echo.enqueue(value={"nested": object()})
    assert jobs(rota) == 0


@pytest.mark.parametrize("alias", SQLITE)
@pytest.mark.parametrize("priority", [-101, 101, 3.5])
def test_a_priority_outside_djangos_range_is_invalid(rota: DjangoRota, priority: Any) -> None:
    with pytest.raises(InvalidTask, match="priority must be a whole number between -100 and 100"):
        tasks.echo.using(priority=priority)


@pytest.mark.parametrize("alias", SQLITE)
def test_a_naive_run_after_is_invalid(rota: DjangoRota) -> None:
    with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
        tasks.echo.using(run_after=datetime(2030, 1, 1))


@pytest.mark.parametrize("alias", SQLITE)
def test_only_the_backends_queues_are_valid(rota: DjangoRota) -> None:
    with pytest.raises(InvalidTask, match="Queue 'other' is not valid for backend"):
        tasks.echo.using(queue_name="other")
    with override_settings(TASKS=tasks_setting(queues=[])):  # Django's: every name
        result = tasks.echo.using(queue_name="other").enqueue()
        assert rota.job(int(result.id)).queue == "other"
        with pytest.raises(InvalidTask, match="queue"):  # but rota's rules for names hold
            tasks.echo.using(queue_name="x" * 65).enqueue()
    assert jobs(rota) == 1


@pytest.mark.parametrize("alias", SQLITE)
def test_a_function_not_at_module_level_is_invalid(rota: DjangoRota) -> None:
    def local() -> None: ...

    with pytest.raises(InvalidTask, match="Task function must be defined at a module level"):
        task()(local)


@pytest.mark.parametrize("alias", SQLITE)
def test_enqueue_sends_task_enqueued(rota: DjangoRota) -> None:
    sent: list[TaskResult[..., Any]] = []

    def receive(sender: type, task_result: TaskResult[..., Any], **kwargs: Any) -> None:
        sent.append(task_result)

    task_enqueued.connect(receive)
    try:
        result = tasks.echo.enqueue()
    finally:
        task_enqueued.disconnect(receive)
    assert sent == [result]


@pytest.mark.parametrize("alias", SQLITE)
def test_unknown_options_and_a_path_that_is_no_rota_are_errors(rota: DjangoRota) -> None:
    with (
        override_settings(TASKS=tasks_setting(RETRYS=2)),
        pytest.raises(ImproperlyConfigured, match="'RETRYS', which RotaBackend does not know"),
    ):
        _ = task_backends["default"]
    with (
        override_settings(TASKS=tasks_setting(ROTA="tests.django.backend_tasks.ran")),
        pytest.raises(ImproperlyConfigured, match="is not a Rota"),
    ):
        tasks.echo.enqueue()


@pytest.mark.parametrize("alias", SQLITE)
def test_by_default_a_task_is_defined_on_the_projects_rota(
    monkeypatch: pytest.MonkeyPatch, make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    """As when a worker imports an app's ``tasks.py``: making the task defines it, a sync one
    as a Django request (``RequestTask``), before anything is enqueued."""
    rota = make_rota(alias)
    monkeypatch.setattr(project, "_project", rota)
    setting = tasks_setting()
    del setting["default"]["OPTIONS"]["ROTA"]
    with override_settings(TASKS=setting):
        made = task()(tasks.meaning_of_life.func)
        assert isinstance(rota.registry.get(made.module_path), RequestTask)
        result = made.enqueue()
        assert rota.drain().succeeded == 1
        assert made.get_result(result.id).return_value == 42
