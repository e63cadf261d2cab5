"""Who is changing schedules: the actor a schedule's history records.

The CLI, the dashboard and an application's own admin code call the same ``Rota`` methods;
they say who they act for with ``Rota.acting_as(actor)`` around the calls, and the change is
recorded under that name (``api`` when nobody said, ``code`` for definitions synced at start).
A context variable carries it, so concurrent requests of one process never mix their actors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from rota.core.names import check_name
from rota.errors import InvalidArguments

API = "api"
CODE = "code"
SCHEDULER = "scheduler"

_actor: ContextVar[str] = ContextVar("rota_actor", default=API)


def current() -> str:
    return _actor.get()


@contextlib.contextmanager
def acting_as(actor: str) -> Iterator[None]:
    check_name("actor", actor, InvalidArguments)
    token = _actor.set(actor)
    try:
        yield
    finally:
        _actor.reset(token)
