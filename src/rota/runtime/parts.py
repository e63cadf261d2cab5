"""What every runtime service of one ``Rota`` shares: its store, its tasks, its clock and its
event log."""

from __future__ import annotations

from typing import NamedTuple

from rota.core.clock import Clock
from rota.observe.events import EventLog
from rota.store.base import Store
from rota.tasks import TaskRegistry


class Parts(NamedTuple):
    store: Store
    registry: TaskRegistry
    clock: Clock
    events: EventLog
