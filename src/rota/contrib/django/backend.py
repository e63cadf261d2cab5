"""A ``django.tasks`` backend (Django 6; the ``django-tasks`` backport on Django 5.2) whose
tasks are rota jobs, run by ``manage.py rota worker``::

    TASKS = {
        "default": {
            "BACKEND": "rota.contrib.django.backend.RotaBackend",
            "QUEUES": ["default", "mail"],       # Django's: [] allows every queue name
            "OPTIONS": {"RETRIES": 0},          # what a failed task gets (rota's retries=)
        }
    }

- ``enqueue`` writes a job of the task's function (``backend_jobs``) in ``task.queue_name``,
  due at ``task.run_after``; inside ``transaction.atomic()`` on rota's database the job is
  written in that transaction, as every ``rota.queue`` of a ``DjangoRota`` is. The result's id
  is the job id.
- Priorities: Django's -100..100 runs higher first, rota's -1000..1000 lower first, so a job's
  rota priority is minus the Django one (Django 100 is rota -100: before rota's default 0).
- ``get_result(id)`` reads the job: pending or paused is ``READY``, running ``RUNNING``,
  succeeded ``SUCCESSFUL`` (with the return value), failed or cancelled ``FAILED``; each failed
  attempt is an error (exception class path, traceback). An id that names no job, or a job of
  a task that is not a Django task of this process, is ``TaskResultDoesNotExist``.
- Arguments and return values are normalised as Django's own backends do (tuples become lists;
  anything JSON cannot hold is Django's ``TypeError`` at enqueue, a failure at return).
- ``enqueue``'s result has the job's ``created_at`` as ``enqueued_at``, the value
  ``get_result`` reads back.
- ``OPTIONS["ROTA"]``: the import path of the ``Rota`` to use, by default the project's
  (``rota.contrib.django.rota``).

A worker of the Rota serves, unless told which queues to serve, every queue of ``QUEUES``
beside its tasks' own (``DjangoRota``), so a task sent to one of them by
``using(queue_name=...)`` runs. Django's signals are sent: ``task_enqueued`` by ``enqueue``,
``task_started`` and ``task_finished`` by the worker, once the start or the end is committed
(``backend_signals``).
"""

from __future__ import annotations

from typing import Any, ParamSpec, TypeVar, cast

from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from rota.app import Rota
from rota.contrib.django import backend_jobs, backend_signals
from rota.contrib.django.backend_api import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    normalize_json,
    task_enqueued,
)
from rota.contrib.django.backend_modules import import_named
from rota.enqueue import Enqueue
from rota.errors import InvalidArguments, JobNotFound

P = ParamSpec("P")
R = TypeVar("R")
OPTIONS = {"ROTA": "rota.contrib.django.rota", "RETRIES": 0}


class RotaBackend(BaseTaskBackend):
    """Django tasks as rota jobs (see the module's docstring)."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS'] has {', '.join(map(repr, unknown))}, which "
                f"RotaBackend does not know (it knows {', '.join(map(repr, OPTIONS))})"
            )
        chosen = {**OPTIONS, **self.options}
        self._rota_path = str(chosen["ROTA"])
        self._retries = chosen["RETRIES"]
        self._looked_into: set[str] = set()

    @property
    def rota(self) -> Rota:
        """The Rota of ``OPTIONS["ROTA"]``, looked up at each use so that it is the one the
        project holds at that moment (a test may swap it)."""
        found = import_string(self._rota_path)
        if not isinstance(found, Rota):
            raise ImproperlyConfigured(f"{self._rota_path!r} is not a Rota")
        return found

    def validate_task(self, task: Task[..., Any]) -> None:
        """Django's checks, then the task's function is defined on the Rota: every process
        that imports the task (a worker included) can run its jobs."""
        super().validate_task(task)
        rota = self.rota
        backend_jobs.register(task, rota, self.alias, self._retries)
        backend_signals.connect(rota, self.alias, type(self))

    def enqueue(
        self, task: Task[P, R], args: list[Any], kwargs: dict[str, Any]
    ) -> TaskResult[P, R]:
        self.validate_task(task)
        args = cast("list[Any]", normalize_json(args))  # Django's TypeError for a non-JSON value
        kwargs = cast("dict[str, Any]", normalize_json(kwargs))
        rota = self.rota
        run_at = task.run_after
        if run_at is not None and timezone.is_naive(run_at):  # USE_TZ = False: local time
            run_at = timezone.make_aware(run_at)
        request = Enqueue(
            task.module_path,
            args=tuple(args),
            kwargs=kwargs,
            queue=task.queue_name,
            priority=backend_jobs.rota_priority(task.priority),
            run_at=run_at,
        )
        try:
            [job_id], enqueued_at = rota._queue_stamped([request], None)
        except InvalidArguments as exc:  # a queue name or a payload rota refuses
            raise InvalidTask(str(exc)) from exc
        result: TaskResult[P, R] = TaskResult(
            task=task,
            id=str(job_id),
            status=TaskResultStatus("READY"),
            enqueued_at=enqueued_at,  # the job's created_at, as get_result reads it
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult[..., Any]:
        try:
            job = self.rota.job(int(result_id))
        except (ValueError, TypeError, JobNotFound, InvalidArguments):
            raise TaskResultDoesNotExist(f"no task result {result_id!r}") from None
        known = backend_jobs.KNOWN.get(job.task)
        # A task outside tasks.py this process never imported: found as a worker finds it.
        if known is None and import_named(self.rota, [job.task], self._looked_into):
            known = backend_jobs.KNOWN.get(job.task)
        if known is None:
            raise TaskResultDoesNotExist(
                f"job {job.id} is of task {job.task!r}, not of a Django task this process defines"
            )
        return backend_jobs.result_of(known, job, self.alias)
