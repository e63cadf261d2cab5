"""Django tasks defined outside a ``tasks.py``, found by a worker from the name of a job.

Django lets a task live in any module; a job of one names it by its module path
(``shop.emails.send_receipt``), and a worker that never imported that module would not know
it. DESIGN's rule holds that nothing is imported or evaluated from a string read from the
database: a job's task name is not trusted as an import path. It is taken only as a question
the project's own code answers, and only when every answer is yes:

- its module lies inside an app of ``INSTALLED_APPS`` (Django's ``get_containing_app_config``),
  so only the project's own code is ever imported, never ``os`` or a third party's module;
- that module exists, and importing it (which runs only that code, as autodiscovery would)
  defines, under the last part of the name, a ``django.tasks`` ``Task`` whose module path is
  the name itself;
- that task's backend is a ``RotaBackend`` on this very Rota, which then validates and so
  registers it, as it does every task it sees (``backend_jobs.register``).

Anything else leaves the job waiting, flagged as a job of a task no worker knows, as before.
A name is looked into once per process.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Iterable

from django.apps import apps

from rota.app import Rota
from rota.contrib.django.backend_api import Task

logger = logging.getLogger(__name__)


def import_named(rota: Rota, names: Iterable[str], tried: set[str]) -> list[str]:
    """The names of ``names`` that became tasks of ``rota`` (see the module's docstring);
    every name is added to ``tried`` and not looked into again."""
    found = []
    for name in names:
        if name in tried or rota.registry.find(name) is not None:
            continue
        tried.add(name)
        if _declared(rota, name):
            found.append(name)
    return found


def _declared(rota: Rota, name: str) -> bool:
    module_name, _, attribute = name.rpartition(".")
    if not module_name or not attribute.isidentifier():
        return False
    if apps.get_containing_app_config(module_name) is None:
        return False
    try:
        if importlib.util.find_spec(module_name) is None:
            return False
        module = importlib.import_module(module_name)
    except Exception:  # the project's module fails to import: said once, the job waits
        logger.exception("the module of task %r cannot be imported", name)
        return False
    task = getattr(module, attribute, None)
    if not isinstance(task, Task) or task.module_path != name:
        return False
    backend = task.get_backend()
    if getattr(backend, "rota", None) is not rota:  # a RotaBackend on this very Rota
        return False
    backend.validate_task(task)
    return rota.registry.find(name) is not None
