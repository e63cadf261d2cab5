"""Django tasks for the backend's tests (``test_backend``), defined at module level as Django
requires, and the Rota the tests' ``TASKS`` setting points the backend to (``OPTIONS["ROTA"]``).

They are made when this module is imported, under whatever backend ``TASKS`` names then; the
tests enqueue them with ``RotaBackend`` in place, which validates (and registers) them again.
"""

from __future__ import annotations

from typing import Any

from rota.contrib.django import DjangoRota
from rota.contrib.django.backend_api import TaskContext, task

rota: DjangoRota | None = None
"""Set by the tests' fixture to the Rota of the test."""

ran: list[str] = []
"""What ``record`` was called with, in the order the worker ran it."""


@task()
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"args": list(args), "kwargs": kwargs}


@task()
async def echo_async(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"args": list(args), "kwargs": kwargs}


@task()
def meaning_of_life() -> int:
    return 42


@task()
def record(label: str) -> None:
    ran.append(label)


@task()
def fails() -> None:
    raise ValueError("it failed on purpose")


@task()
def exits() -> None:
    raise SystemExit("it exited on purpose")


@task()
def fails_nested() -> None:
    raise ValueError(ValueError("the inner one"))


@task()
def returns_a_function() -> Any:
    return lambda: True  # neither JSON nor picklable


@task(takes_context=True)
def own_id(context: TaskContext[Any, Any]) -> list[Any]:
    result = context.task_result
    return [result.id, context.attempt, result.status, result.worker_ids]


@task(takes_context=True)
async def own_id_async(context: TaskContext[Any, Any]) -> list[Any]:
    result = context.task_result
    return [result.id, context.attempt, result.status, result.worker_ids]
