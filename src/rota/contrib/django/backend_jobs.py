"""Django tasks as rota tasks, and rota jobs as Django task results.

A worker runs only the tasks registered in its own code (DESIGN, "Concepts"), never a function
named by a row. So each Django ``Task`` the backend validates, which Django does when the
``@task`` decorator makes it (at the import of the app's ``tasks.py``, which autodiscovery does
in every process), becomes a rota task named after the function's module path, whose handler
calls that function. A worker that has not imported a task's module finds it from the job's
name when the project declared it (``backend_modules``); any other job of a task no deployed
worker knows waits, flagged by ``rota check`` like any job of an unknown task.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime
from inspect import iscoroutinefunction
from typing import Any

from rota.app import Rota
from rota.context import JobContext
from rota.contrib.django.backend_api import (
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    normalize_json,
)
from rota.core.model import Job, JobState
from rota.tasks import TaskDefinition

STATUSES = {
    JobState.PENDING: "READY",
    JobState.PAUSED: "READY",
    JobState.RUNNING: "RUNNING",
    JobState.SUCCEEDED: "SUCCESSFUL",
    JobState.FAILED: "FAILED",
    JobState.CANCELLED: "FAILED",
    JobState.UNKNOWN: "READY",
}
"""``TaskResultStatus`` values (by value: django-stubs types the members themselves as ``...``).
A paused job is waiting to be run again; a cancelled one will never succeed; one in a state
this rota does not know (a newer rota's) has not ended as far as it can tell, as
``rota.result`` sees it."""

KNOWN: dict[str, Task[..., Any]] = {}
"""The Django tasks validated in this process by module path: what a job's task name maps back
to. The first one seen (the decorated task) stands for its function's variants (``using()``),
which differ only in what a job records itself."""


def rota_priority(priority: int) -> int:
    """Django runs higher priorities first (-100..100), rota lower ones (-1000..1000)."""
    return -priority


def register(task: Task[..., Any], rota: Rota, alias: str, retries: int) -> None:
    """Define ``task``'s function on ``rota`` (once: a name keeps its first handler)."""
    name = task.module_path
    KNOWN.setdefault(name, task)
    if rota.registry.find(name) is None:
        handler = _handler(KNOWN[name], rota, alias)
        definition = TaskDefinition(
            name=name, handler=handler, retries=retries, queue=task.queue_name
        )
        rota.define_task(definition)


def _handler(task: Task[..., Any], rota: Rota, alias: str) -> Any:
    """The rota handler calling ``task``'s function with the job's arguments (and, when it
    takes one, a ``TaskContext`` of the running job, read from the database), its return value
    normalised as Django's backends do: a value JSON cannot hold fails the attempt."""
    if iscoroutinefunction(task.func):

        async def run_async(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
            if task.takes_context:
                job = await asyncio.to_thread(rota.job, ctx.job_id)
                args = (TaskContext(task_result=result_of(task, job, alias)), *args)
            return normalize_json(await task.acall(*args, **kwargs))

        return run_async

    def run(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
        if task.takes_context:
            args = (TaskContext(task_result=result_of(task, rota.job(ctx.job_id), alias)), *args)
        return normalize_json(task.call(*args, **kwargs))

    return run


def result_of(known: Task[..., Any], job: Job, alias: str) -> TaskResult[..., Any]:
    """The Django result of ``job``, a job of ``known``'s function.

    rota keeps one start time (the last attempt's), so ``started_at`` and ``last_attempted_at``
    are both it. ``worker_ids`` has an entry per attempt (``attempts`` is right): the worker of
    each failed attempt is on its error, that of the last one (running or final) is the job's
    lease owner; an attempt whose worker rota did not record is ``""``. ``run_after`` is the
    job's ``run_at`` when that was later than its creation."""
    run_after: datetime | None = job.run_at if job.run_at > job.created_at else None
    task = dataclasses.replace(
        known,
        priority=rota_priority(job.priority),
        queue_name=job.queue,
        run_after=run_after,
        backend=alias,
    )
    ran_on = {error.attempt: error.worker for error in job.errors if error.worker}
    if job.lease_owner and job.attempt:
        ran_on[job.attempt] = job.lease_owner
    workers = [ran_on.get(attempt, "") for attempt in range(1, job.attempt + 1)]
    result: TaskResult[..., Any] = TaskResult(
        task=task,
        id=str(job.id),
        status=TaskResultStatus(STATUSES[job.state]),
        enqueued_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        last_attempted_at=job.started_at,
        args=list(job.args),
        kwargs=dict(job.kwargs),
        backend=alias,
        errors=[
            TaskError(exception_class_path=error.type, traceback=error.traceback)
            for error in job.errors
        ],
        worker_ids=workers,
    )
    if job.state is JobState.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)  # frozen, as Django sets it
    return result
