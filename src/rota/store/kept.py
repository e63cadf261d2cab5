"""Statements built once and kept: what a worker runs for every claim and every completion.

Building a statement and its cache key again for each claim cost more CPU than the database's
work (issue 33); so the hot statements are built once per shape, their changing values (the
time, the lease, the ids) as parameters, and kept, up to a bound past which they start again.
A statement built on another object (a kept candidates statement, a worker's guard) is kept
for that object itself: found only while the one it was built on is the one asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

S = TypeVar("S")


class Kept(Generic[S]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[Hashable, tuple[object, S]] = {}

    def get(self, shape: Hashable, build: Callable[[], S], on: object = None) -> S:
        """The statement of ``shape`` (built ``on`` that object), built by ``build`` the first
        time. ``on`` is held with it, so that its id, part of ``shape``, names no other."""
        found = self._kept.get(shape)
        if found is not None and found[0] is on:
            return found[1]
        if len(self._kept) >= self.limit:
            self._kept.clear()
        statement = build()
        self._kept[shape] = (on, statement)
        return statement

    def clear(self) -> None:
        self._kept.clear()
