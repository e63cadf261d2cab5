"""A Django worker looks, while it runs, for jobs of ``django.tasks`` tasks it has not imported.

Autodiscovery imports each app's ``tasks.py`` at start-up; a Django task may live in any other
module, which the worker then never imports. Every few polls (and before each ``drain``), the
Rota reads the names of the tasks with pending jobs (``counts()``, kept exact for pending
jobs) and hands those it does not know to ``backend_modules``, which imports only what the
project declared as a task of this Rota. Only when ``TASKS`` sends tasks to this Rota: a
project without ``django.tasks`` pays nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from rota.app import Rota
from rota.core.events import EventName
from rota.observe.events import Event

logger = logging.getLogger(__name__)


def find_named(rota: Rota, tried: set[str]) -> list[str]:
    """The tasks of ``rota``'s pending jobs this process did not know and now does."""
    from rota.contrib.django.backend_modules import import_named

    pending = [task for task, states in rota.counts().by_task.items() if states.get("pending")]
    unknown = [task for task in pending if rota.registry.find(task) is None]
    return import_named(rota, unknown, tried) if unknown else []


def watch(rota: Rota, find: Callable[[], Any], every: float) -> None:
    """Call ``find`` every ``every`` seconds in a thread of its own, from each start of
    ``rota``'s worker until it stops (its ``worker.started`` and ``worker.stopped`` events)."""
    stopped = threading.Event()

    def loop() -> None:
        while not stopped.wait(every):
            try:
                find()
            except Exception:  # the database is away, a module is broken: tried again later
                logger.exception("looking for the tasks of pending jobs failed")

    def start(event: Event) -> None:
        stopped.clear()
        threading.Thread(target=loop, name="rota-django-tasks", daemon=True).start()

    def stop(event: Event) -> None:
        stopped.set()

    rota.events.on(EventName.WORKER_STARTED, start)
    rota.events.on(EventName.WORKER_STOPPED, stop)
