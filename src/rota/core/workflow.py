"""Durable workflows, as values: a saved step, how a run names its steps, a batch and its
status.

A handler's run is replayed from the top on every attempt and every resume, so the steps it
reaches are found again by name. A name used more than once in a run (a step in a loop) is
numbered by occurrence, ``name``, ``name#2``, ``name#3``: the same code reaching the same calls
in the same order finds the same saved steps (``Occurrences``). A sleep is a step too: its saved
result is the moment it ends.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.core.names import name_problem
from rota.errors import InvalidArguments


@dataclass(frozen=True)
class Step:
    """A finished step of a job: its name (numbered by occurrence), the JSON value its function
    returned (for a sleep, the ISO moment it ends), and when it was saved."""

    name: str
    result: Any
    finished_at: datetime


class Occurrences:
    """The saved name of each step a run reaches: the name given, numbered from its second use
    on (``name#2``)."""

    def __init__(self) -> None:
        self._used: Counter[str] = Counter()

    def next(self, name: object) -> str:
        """The saved name of the next use of ``name``; ``InvalidArguments`` for a name that
        breaks the names' rules (``core.names``, at most 200 characters)."""
        problem = name_problem("step", name)
        if problem is not None:
            raise InvalidArguments(problem)
        assert isinstance(name, str)
        self._used[name] += 1
        count = self._used[name]
        return name if count == 1 else f"{name}#{count}"


@dataclass(frozen=True)
class Batch:
    """A batch just queued (``rota.batch``): its id and its jobs' ids, in the order given."""

    id: int
    job_ids: list[int]
    """As ``queue_many`` returns them."""


@dataclass(frozen=True)
class BatchStatus:
    """A batch's jobs (its callbacks aside) counted by state, as they stand; ``finished`` once
    none is left to end. A pruned job is no longer counted."""

    id: int
    size: int
    """How many jobs the batch was queued with."""
    by_state: dict[str, int]
    finished: bool
