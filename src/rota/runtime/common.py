"""What the services, the worker and the host of one ``Rota`` share (``Common``: its store, its
tasks, its clock and its event log), and what a service needs of the process (``Gate``)."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from rota.core.clock import Clock
from rota.observe.events import EventLog
from rota.store.base import Store
from rota.tasks import TaskRegistry


class Common(NamedTuple):
    store: Store
    registry: TaskRegistry
    clock: Clock
    events: EventLog


class Gate(Protocol):
    """What a call from the application needs of the process (``host.wakeups.ProcessGate``):
    the database reached (and migrated) before its first read or write, and this process's
    loops woken after a change they would otherwise see only at their next poll."""

    def ensure_ready(self) -> None: ...

    def wake_worker(self) -> None: ...

    def wake_scheduler(self) -> None: ...
