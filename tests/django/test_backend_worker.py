"""What ``RotaBackend``'s jobs look like from a worker's side, on SQLite, MariaDB and
PostgreSQL: ``enqueued_at`` as stored, the workers that ran each attempt, Django's
``task_started``/``task_finished`` signals, every queue of ``QUEUES`` served, and a task
defined outside ``tasks.py`` found from its job's name (and nothing else imported from one)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import django
import pytest

from rota import JobState
from rota.contrib.django import DjangoRota, backend_jobs
from rota.contrib.django.backend import RotaBackend
from rota.contrib.django.backend_api import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_finished,
    task_started,
)
from rota.testing import FakeClock
from tests.django import backend_tasks as tasks
from tests.django.backend_setup import rota_backend
from tests.django.conftest import on

BACKENDS = on("sqlite", "mariadb", "postgres")
LOGGER = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
"""Where Django's receivers of the signals log (the backport's own name on Django 5.2)."""


@pytest.fixture
def rota(make_rota: Callable[..., DjangoRota], alias: str) -> Iterator[DjangoRota]:
    with rota_backend(make_rota, alias, queues=["default", "mail", "reports"]) as made:
        yield made


@pytest.mark.parametrize("alias", BACKENDS)
def test_enqueued_at_is_the_stored_one(rota: DjangoRota) -> None:
    assert isinstance(rota.clock, FakeClock)
    result = tasks.meaning_of_life.enqueue()
    rota.clock.advance(timedelta(seconds=7))  # a clock read after the insert would show it
    stored = rota.job(int(result.id)).created_at
    assert result.enqueued_at == stored
    assert tasks.meaning_of_life.get_result(result.id).enqueued_at == stored
    before = result.enqueued_at
    result.refresh()
    assert result.enqueued_at == before


@pytest.mark.parametrize("alias", BACKENDS)
def test_worker_ids_name_the_worker_of_each_attempt(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    with rota_backend(make_rota, alias, RETRIES=1) as rota:
        assert isinstance(rota.clock, FakeClock)
        done, failing = tasks.meaning_of_life.enqueue(), tasks.fails.enqueue()
        assert rota.drain().retried == 1
        rota.clock.advance(timedelta(hours=1))
        assert rota.drain().failed == 1
        done.refresh()
        failing.refresh()
        job = rota.job(int(done.id))
        assert job.state is JobState.SUCCEEDED and job.lease_owner
        assert done.worker_ids == [job.lease_owner]
        assert len(failing.worker_ids) == 2 and all(failing.worker_ids), failing.worker_ids
        assert [e.worker for e in rota.job(int(failing.id)).errors] == failing.worker_ids


class Heard:
    """The ``task_started``/``task_finished`` signals sent, until ``count`` of them were."""

    def __init__(self, count: int) -> None:
        self.signals: list[tuple[str, Any, Any]] = []
        self.count = count
        self.enough = threading.Event()

    def __call__(self, signal: Any, sender: Any, task_result: Any, **kwargs: Any) -> None:
        which = "started" if signal is task_started else "finished"
        self.signals.append((which, sender, task_result))
        if len(self.signals) >= self.count:
            self.enough.set()


@pytest.mark.parametrize("alias", BACKENDS)
def test_the_worker_sends_task_started_and_task_finished(
    rota: DjangoRota, caplog: pytest.LogCaptureFixture
) -> None:
    heard = Heard(4)
    task_started.connect(heard)
    task_finished.connect(heard)
    try:
        with caplog.at_level("INFO", logger=LOGGER):
            ok, failed = tasks.meaning_of_life.enqueue(), tasks.fails.enqueue()
            drained = rota.drain()
            assert heard.enough.wait(10), heard.signals  # hooks run after the commit
    finally:
        task_started.disconnect(heard)
        task_finished.disconnect(heard)
    assert (drained.succeeded, drained.failed) == (1, 1)
    seen = {(which, r.id, r.status) for which, _, r in heard.signals}
    assert seen == {
        ("started", ok.id, TaskResultStatus.RUNNING),
        ("finished", ok.id, TaskResultStatus.SUCCESSFUL),
        ("started", failed.id, TaskResultStatus.RUNNING),
        ("finished", failed.id, TaskResultStatus.FAILED),
    }
    assert all(sender is RotaBackend for _, sender, _ in heard.signals)
    order = [(which, r.id) for which, _, r in heard.signals]
    assert order.index(("started", ok.id)) < order.index(("finished", ok.id))
    [finished] = [r for which, _, r in heard.signals if which == "finished" and r.id == ok.id]
    assert finished.return_value == 42 and finished.worker_ids and finished.worker_ids[0]
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    for result, end in ((ok, "SUCCESSFUL"), (failed, "FAILED")):
        states = [m.rsplit("state=", 1)[1] for m in logged if f"Task id={result.id} " in m]
        assert states == ["RUNNING", end], logged


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_queue_of_queues_no_task_declares_is_served(rota: DjangoRota) -> None:
    result = tasks.meaning_of_life.using(queue_name="reports").enqueue()
    assert "reports" in rota.registry.queues()
    assert rota.drain().succeeded == 1
    assert tasks.meaning_of_life.get_result(result.id).return_value == 42


STRANGERS = [
    "os.system",  # outside every installed app
    "tests.django.shop.jobs.helper",  # a plain function of an app
    "tests.django.shop.models.Order",  # not a task
    "tests.django.shop.nowhere.shout",  # no such module
    "tests.django.shop.jobs",  # a module
    "tests.django.shop.tasks.settings_module",  # a rota task this Rota does not have
]


@pytest.mark.parametrize("alias", BACKENDS)
def test_a_task_outside_tasks_py_is_found_from_its_job(rota: DjangoRota) -> None:
    """A job written by a process that imported the task's module (here: by name, as such a
    process writes it) runs on a worker that had not: the name leads to a task declared in an
    installed app's module for this Rota. Nothing else a name says is imported or run."""
    name = "tests.django.shop.jobs.shout"
    assert rota.registry.find(name) is None
    job = rota.queue(name, "hello")
    strangers = [rota.queue(stranger) for stranger in STRANGERS]
    assert rota.drain().succeeded == 1
    assert (rota.job(job).state, rota.job(job).result) == (JobState.SUCCEEDED, "HELLO")
    assert {rota.job(s).state for s in strangers} == {JobState.PENDING}
    assert "tests.django.shop.nowhere" not in sys.modules
    assert rota.registry.find("tests.django.shop.jobs.helper") is None


@pytest.mark.parametrize("alias", BACKENDS)
def test_the_result_of_a_task_outside_tasks_py_is_found_from_its_job(
    rota: DjangoRota, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get_result`` in a process that never imported the task's module (a web process reading
    what another one queued) finds the task as a worker does; a name that leads to no task of
    this Rota is still no result."""
    name = "tests.django.shop.jobs.shout"
    monkeypatch.delitem(backend_jobs.KNOWN, name, raising=False)
    assert rota.registry.find(name) is None
    job, stranger = rota.queue(name, "hello"), rota.queue(STRANGERS[0])
    backend = task_backends["default"]
    result = backend.get_result(str(job))
    assert (result.task.module_path, result.args) == (name, ["hello"])
    assert result.status == TaskResultStatus.READY
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(str(stranger))
    assert rota.drain().succeeded == 1
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, "HELLO")
