"""A test's transaction shared with ``drain()``: Django's ``TestCase`` and pytest-django's
``django_db`` run each test inside a transaction on Django's connection, rolled back after it.

A job queued there is written in that transaction (``connections``), which no other connection
sees. So a ``drain()`` called while the caller's Django connection to rota's database holds a
transaction runs wholly on that connection: rota's own statements, from whichever of the
drain's threads, through ``Store.lend_from``, and the handlers' ORM queries, whose threads use
the caller's connection in place of their own (as Django's ``LiveServerTestCase`` shares an
in-memory database). One connection serves one statement at a time: a lock held by each of
rota's transactions and around each handler makes them take turns, so the drained jobs run one
after another. Everything they write is rolled back with the test.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connections

from rota.store import Loan


@dataclass(frozen=True)
class Shared:
    """The caller's connection wrapper, shared while a drain runs, and its turns."""

    wrapper: Any
    serial: threading.RLock


_shared: dict[str, Shared] = {}
"""By alias: the connections shared by the drains running now (at most one per alias)."""


@contextlib.contextmanager
def share(alias: str) -> Iterator[None]:
    """Share this thread's Django connection of ``alias``, which holds a transaction open,
    with every thread until the block ends."""
    wrapper = connections[alias]
    wrapper.inc_thread_sharing()
    _shared[alias] = Shared(wrapper, threading.RLock())
    try:
        yield
    finally:
        del _shared[alias]
        wrapper.dec_thread_sharing()


def loan(alias: str) -> Loan | None:
    """The shared connection of ``alias`` for one transaction of rota's, if a drain shares
    one (connected: ``share`` is called inside its transaction; read without Django's calls,
    which refuse the drain's event loop thread)."""
    found = _shared.get(alias)
    return None if found is None else Loan(found.wrapper.connection, found.serial)


def active() -> bool:
    """Whether a drain shares a connection now."""
    return bool(_shared)


@contextlib.contextmanager
def joined() -> Iterator[None]:
    """In a handler's thread: Django's connections of the shared aliases are the shared ones,
    taken in turn, until the block ends; the thread's own are put back then."""
    found = dict(_shared)
    previous = {alias: connections[alias] for alias in found}
    with contextlib.ExitStack() as turns:
        for shared in found.values():
            turns.enter_context(shared.serial)
        for alias, shared in found.items():
            connections[alias] = shared.wrapper
        try:
            yield
        finally:
            for alias, wrapper in previous.items():
                connections[alias] = wrapper
