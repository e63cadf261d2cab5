"""Enqueue: one job request, with exactly the arguments and options of ``Rota.queue``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from rota.errors import InvalidArguments


class Enqueue:
    """A job for ``Rota.queue_many``, built like a ``Rota.queue`` call.

    >>> rota.queue_many([Enqueue(send_email, "a@example.com"), Enqueue("report", delay=60)])
    [101, 102]
    """

    __slots__ = ("args", "delay", "kwargs", "priority", "queue", "run_at", "task", "unique_key")

    def __init__(
        self,
        task: str | Callable[..., Any],
        /,
        *positional: Any,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique_key: str | None = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        **keyword: Any,
    ) -> None:
        if (args is not None and positional) or (kwargs is not None and keyword):
            raise InvalidArguments("pass arguments either directly or with args=/kwargs=, not both")
        self.task = task
        self.args: tuple[Any, ...] = positional if args is None else tuple(args)
        self.kwargs: dict[str, Any] = keyword if kwargs is None else dict(kwargs)
        self.delay = delay
        self.run_at = run_at
        self.priority = priority
        self.queue = queue
        self.unique_key = unique_key

    def __repr__(self) -> str:
        return f"Enqueue({self.task!r}, args={self.args!r}, kwargs={self.kwargs!r})"
