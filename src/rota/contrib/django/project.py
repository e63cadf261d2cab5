"""The project's ``Rota``: configured by ``settings.ROTA``, built at its first use.

``tasks.py`` modules are imported while Django starts (``apps.RotaAppConfig.ready``), before a
test runner has switched the connections to its test databases. So the Rota takes its tasks
and hooks from then on, but its database URL is derived, and its store made, only when it is
first used for anything else: from the settings of the connection Django uses at that moment,
the test database included. ``queue`` checks that this is still the database it was built on.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

from rota.app import Rota
from rota.contrib.django import connections as django_connections
from rota.contrib.django import discovery, options, sharing
from rota.contrib.django.databases import backend_driver, database_url
from rota.core.events import EventName
from rota.core.model import DrainResult
from rota.enqueue import Enqueue
from rota.errors import ConfigError
from rota.observe.events import EventLog, Hook
from rota.store import CallerConnection, Loan
from rota.tasks import TaskDefinition, TaskRegistry

NEW, BUILDING, BUILT = "new", "building", "built"
ROTA_ATTRIBUTES = frozenset(
    {
        "_bulk",
        "_completions",
        "_config",
        "_control",
        "_database_named",
        "_enqueuing",
        "_host",
        "_inspection",
        "_readiness",
        "_schedules",
        "_workflows",
        "clock",
        "events",
        "store",
        "telemetry",
    }
)
"""What ``Rota.__init__`` sets on an instance (a test compares them): the names that build a
``DjangoRota`` when first read. ``registry`` is set before the build."""
_project: DjangoRota | None = None
_project_lock = threading.Lock()
built: weakref.WeakSet[DjangoRota] = weakref.WeakSet()
"""Every DjangoRota built in this process, whose pool ``testdb`` closes with its database."""


def get_rota() -> DjangoRota:
    """The project's one Rota (``from rota.contrib.django import rota``), made at the first
    call; it reads ``settings.ROTA`` when it is first used."""
    global _project
    with _project_lock:
        if _project is None:
            _project = DjangoRota()
        return _project


def project_options(setting: Mapping[str, Any] | None = None) -> options.Options:
    """``setting``, or else ``settings.ROTA`` (``{}`` when the project has none), read."""
    return options.read(getattr(settings, "ROTA", {}) if setting is None else setting)


def project_url(chosen: options.Options) -> str:
    """The URL of the database ``chosen`` names, as Django's connection to it is now set."""
    if chosen.database not in settings.DATABASES:
        known = ", ".join(sorted(settings.DATABASES))
        raise ConfigError(
            f"settings.ROTA['DATABASE'] is {chosen.database!r}, which DATABASES does not "
            f"define ({known})"
        )
    wrapper = connections[chosen.database]
    driver = chosen.driver or backend_driver(wrapper)
    return database_url(wrapper.vendor, wrapper.settings_dict, driver)


def check(setting: Mapping[str, Any] | None = None) -> None:
    """Every ``ConfigError`` the settings would give at the Rota's first use, now."""
    chosen = project_options(setting)
    chosen.config(project_url(chosen))


class DjangoRota(Rota):
    """A ``Rota`` on a Django database, built at its first use (see the module's docstring).

    Sync handlers run as Django requests do (``connections.RequestTask``), and a job queued
    inside a transaction of Django's on that database is written in it.

    >>> rota = DjangoRota({"DATABASE": "default", "TABLE_PREFIX": "rota_"})
    """

    def __init__(self, setting: Mapping[str, Any] | None = None) -> None:
        """``setting`` has the form of ``settings.ROTA``, which is read when it is ``None``.

        ``Rota.__init__`` runs in ``_build``; until then the instance holds only what tasks
        and hooks register."""
        self._setting = setting
        self._state = NEW
        self._building = threading.RLock()
        self._hooks: list[tuple[EventName | str, Hook]] = []
        self._early = EventLog()
        """Checks the hooks' event names when they are registered, not at the build."""
        self.registry = TaskRegistry()
        self._tried: set[str] = set()
        """Task names of jobs looked into by ``discovery`` (once each)."""

    def __getattr__(self, name: str) -> Any:
        """Only what ``Rota.__init__`` sets can be missing: build (or wait for the thread that
        is building), then look again. Any other name is missing, built or not: a probe of
        pytest's, ``mock``'s or ``inspect``'s (``_mock_name``, ``__wrapped__``) never builds the
        Rota, as its import at the top of a test module would then settle its database before
        the test runner switches to the test database."""
        if name not in ROTA_ATTRIBUTES or self.__dict__.get("_state", BUILT) == BUILT:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._build()
        return object.__getattribute__(self, name)

    def _build(self) -> None:
        with self._building:
            if self._state != NEW:
                return
            self._state = BUILDING
            registry, hooks = self.registry, self._hooks
            try:
                chosen = project_options(self._setting)
                Rota.__init__(self, project_url(chosen), **chosen.keywords)
            except BaseException:
                self.registry, self._state = registry, NEW
                raise
            for definition in registry:
                self.registry.add(definition)
            self.registry.also_serve = self._task_queues
            every = max(1.0, 10 * self.config.poll_interval)
            discovery.watch(self, self._find_named_tasks, every)
            for event, hook in hooks:
                self.events.on(event, hook)
            self._alias = chosen.database
            self._where = _where(connections[chosen.database].settings_dict)
            self.store.lend_from(self._loan)
            self._state = BUILT
            built.add(self)

    def _loan(self) -> Loan | None:
        """The connection of Django's each of the store's transactions runs on: the one a
        drain shares (``sharing``), else this thread's while it holds a transaction open (a
        view under ``ATOMIC_REQUESTS``, a test), whose uncommitted jobs rota then reads."""
        shared = sharing.loan(self._alias)
        if shared is not None:
            return shared
        lent = django_connections.transaction_connection(self._alias)
        return None if lent is None else Loan(lent)

    def drain(self, queue: str | None = None) -> DrainResult:
        """``Rota.drain``; inside a transaction of Django's on the Rota's database (a
        ``TestCase``'s), on that connection and in that transaction, one job at a time
        (``sharing``)."""
        self._build()
        if django_connections.transaction_connection(self._alias) is None:
            return super().drain(queue)
        with sharing.share(self._alias):
            return super().drain(queue)

    def _task_backends(self) -> list[Any]:
        """The ``django.tasks`` backends of ``TASKS`` that send their tasks to this Rota."""
        mine = []
        for alias, params in getattr(settings, "TASKS", {}).items():
            if not _is_rota_backend(params.get("BACKEND")):
                continue
            from rota.contrib.django.backend_api import task_backends

            backend = task_backends[alias]
            if getattr(backend, "rota", None) is self:
                mine.append(backend)
        return mine

    def _task_queues(self) -> list[str]:
        """The ``QUEUES`` of this Rota's ``django.tasks`` backends: a task may be sent to any
        of them (``using(queue_name=...)``), so a worker serves them all unless told which
        queues to serve."""
        return [queue for backend in self._task_backends() for queue in backend.queues]

    def _find_named_tasks(self) -> list[str]:
        """The ``django.tasks`` tasks of pending jobs, defined outside a ``tasks.py``, that this
        process now knows (``discovery``)."""
        if not self._task_backends():
            return []
        return discovery.find_named(self, self._tried)

    async def adrain(self, queue: str | None = None) -> DrainResult:
        """``Rota.adrain``, once the ``django.tasks`` tasks of pending jobs defined outside a
        ``tasks.py`` are found (as a worker finds them while it runs)."""
        self._build()
        self._find_named_tasks()  # in the caller's thread: on a connection ``drain`` shares
        return await super().adrain(queue)

    def prepare(self) -> None:
        """Connect and check the schema (make it, with ``auto_migrate``) now, as the first use
        of the Rota would.

        That first use runs on rota's own connection, and on SQLite, which has one writer,
        waits for any transaction of Django's that has written: a ``queue()`` inside
        ``atomic()`` that is a process's first use would wait for its own transaction. So a
        server prepares the Rota before its first request (``dashboard.WithDashboard`` does,
        at the ASGI lifespan's start-up)."""
        self._build()
        self._readiness.ensure_ready()

    def _task_name(self, function: Callable[..., Any]) -> str:
        """A function's module path (``shop.tasks.send_email``), as Django names its own tasks:
        two apps' ``send_email`` are two tasks."""
        return f"{function.__module__}.{function.__qualname__}"

    def define_task(self, definition: TaskDefinition) -> TaskDefinition:
        with self._building:  # never into the registry a build is replacing
            return super().define_task(django_connections.as_request(definition))

    def on(self, event: EventName | str, hook: Hook) -> None:
        with self._building:
            if self._state != BUILT:
                self._early.on(event, hook)
                self._hooks.append((event, hook))
                return
        super().on(event, hook)

    def queue_many(
        self, requests: Iterable[Enqueue], *, connection: CallerConnection | None = None
    ) -> list[int]:
        """``Rota.queue_many``; inside a transaction of Django's on the Rota's database (and
        without a ``connection`` of the caller's), the jobs are written in that transaction."""
        return self._queue_stamped(list(requests), connection)[0]

    def _queue_stamped(
        self, requests: list[Enqueue], connection: CallerConnection | None
    ) -> tuple[list[int], datetime]:
        self._build()
        self._check_database()
        lent = (
            None
            if connection is not None
            else django_connections.transaction_connection(self._alias)
        )
        if lent is None:
            return super()._queue_stamped(requests, connection)
        with self.store.borrow(lent) as borrowed:
            return super()._queue_stamped(requests, borrowed)

    def _check_database(self) -> None:
        now = _where(connections[self._alias].settings_dict)
        if now != self._where:
            raise ConfigError(
                f"this Rota was built on database {self._where[0]!r} of {self._alias!r}, which "
                f"Django now connects to {now[0]!r} (a test database?): use the Rota only once "
                "the database is the one it will stay on"
            )


def _where(database: Mapping[str, Any]) -> tuple[str, str, str]:
    """What tells one database of a Django connection from another."""
    return (str(database.get("NAME")), str(database.get("HOST")), str(database.get("PORT")))


def _is_rota_backend(path: object) -> bool:
    """Whether ``path`` (a ``TASKS`` entry's ``BACKEND``) names ``RotaBackend`` or a subclass."""
    if not isinstance(path, str):
        return False
    try:
        from rota.contrib.django.backend import RotaBackend

        found = import_string(path)
    except ImportError:  # no tasks framework installed, or a backend that is not there
        return False
    return isinstance(found, type) and issubclass(found, RotaBackend)
