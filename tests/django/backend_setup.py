"""The ``TASKS`` setting of the backend's tests and the fixture that puts it in place."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from django.test import override_settings

from rota.contrib.django import DjangoRota
from rota.testing import FakeClock
from tests.django import backend_tasks

START = datetime(2030, 1, 1, tzinfo=timezone.utc)


def tasks_setting(queues: list[str] | None = None, **options: Any) -> dict[str, Any]:
    return {
        "default": {
            "BACKEND": "rota.contrib.django.backend.RotaBackend",
            "QUEUES": ["default", "mail"] if queues is None else queues,
            "OPTIONS": {"ROTA": "tests.django.backend_tasks.rota", **options},
        }
    }


@contextmanager
def rota_backend(
    make_rota: Callable[..., DjangoRota], alias: str, **options: Any
) -> Iterator[DjangoRota]:
    """``TASKS`` naming ``RotaBackend`` on a Rota of ``make_rota``'s on ``alias`` (a fake clock,
    one job at a time), its schema made first; ``options`` go to the backend's ``OPTIONS``."""
    rota = make_rota(alias, CLOCK=FakeClock(START), CONCURRENCY=1)
    rota.jobs()  # the schema, before a test's transaction of Django's holds SQLite's lock
    previous, backend_tasks.rota = backend_tasks.rota, rota
    backend_tasks.ran.clear()
    try:
        with override_settings(TASKS=tasks_setting(**options)):
            yield rota
    finally:
        backend_tasks.rota = previous
