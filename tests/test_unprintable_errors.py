"""A handler's exception whose ``__str__`` raises is still an ordinary failed attempt.

Its type is recorded with a placeholder message naming what ``__str__`` raised, and the attempt
is retried by the task's policy at once (``EXECUTION_FAILED``): never lost, and never left
``running`` for a lease period to end as ``LEASE_EXPIRED``.  Sync, async, ``BaseException``
and process-isolated handlers alike; the isolated one is a module-level function, since a
child process imports its handler.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rota import JobContext, JobState, Rota
from rota.core.failures import message_of

pytestmark = pytest.mark.sqlite_only


class Unprintable(ValueError):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class Hostile(RuntimeError):
    def __repr__(self) -> str:
        raise Hostile()


class WorseStill(ValueError):
    def __str__(self) -> str:
        raise Hostile()


class UnprintableExit(BaseException):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def unprintable(ctx: JobContext) -> None:
    raise Unprintable("the real problem")


def unprintable_exit(ctx: JobContext) -> None:
    raise UnprintableExit("the real problem")


async def unprintable_async(ctx: JobContext) -> None:
    await asyncio.sleep(0)
    raise Unprintable("the real problem")


def assert_retrying_with_its_type(rota: Rota, job_id: int, kind: type[BaseException]) -> None:
    job = rota.job(job_id)
    assert (job.state, job.attempt) == (JobState.PENDING, 1), job
    (error,) = job.errors
    assert error.code == "EXECUTION_FAILED"
    assert error.type == f"{__name__}.{kind.__qualname__}"
    assert error.message.startswith(f"<unprintable {kind.__qualname__}: __str__ raised ")
    assert "no text for you" in error.message
    assert "raise " in error.traceback and kind.__qualname__ in error.traceback


@pytest.mark.parametrize(
    ("handler", "kind"),
    [
        (unprintable, Unprintable),
        (unprintable_async, Unprintable),
        (unprintable_exit, UnprintableExit),
    ],
)
def test_an_unprintable_exception_is_a_failed_attempt_retried_at_once(
    rota: Rota, handler: Any, kind: type[BaseException]
) -> None:
    rota.task(retries=2)(handler)
    job_id = rota.queue(handler)
    assert rota.drain().retried == 1
    assert_retrying_with_its_type(rota, job_id, kind)


@pytest.mark.slow
def test_an_isolated_handlers_unprintable_exception_crosses_back(rota: Rota) -> None:
    rota.task(isolation="process", retries=2, retry_on=(ValueError,))(unprintable)
    job_id = rota.queue(unprintable)
    assert rota.drain().retried == 1, "retry_on matches the original's classes"
    assert_retrying_with_its_type(rota, job_id, Unprintable)


def test_the_message_of_an_unprintable_exception_names_what_broke() -> None:
    assert message_of(Unprintable("x")) == (
        "<unprintable Unprintable: __str__ raised RuntimeError('no text for you')>"
    )
    assert message_of(WorseStill()) == "<unprintable WorseStill: __str__ raised Hostile>"
    assert message_of(ValueError("plain")) == "plain"
    assert message_of(ValueError()) == "ValueError()"
