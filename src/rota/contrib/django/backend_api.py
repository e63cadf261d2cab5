"""The tasks framework the backend implements: Django's own ``django.tasks`` (Django 6 and
later), else the ``django-tasks`` backport, whose API is the same, on Django 5.2.

Every other module imports these names from here, so the choice is made once. Type checking
always sees ``django.tasks`` (django-stubs describes it whichever Django is installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import django

if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
else:
    from django_tasks import TaskContext, TaskResult, TaskResultStatus, task, task_backends
    from django_tasks import exceptions as _exceptions
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskError
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    # django-tasks 0.12 names it InvalidTaskError; its next release takes Django's name.
    InvalidTask = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
