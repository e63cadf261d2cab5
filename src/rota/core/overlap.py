"""Whether a schedule's tick may start while the schedule's previous run is unfinished.

A schedule's *previous run* is any job of that schedule that is not final: ``pending`` (a tick
not yet started, a retry's back-off, a durable sleep), ``paused``, ``running`` or ``waiting``;
manual runs (``run_now``) count too.  The policy decides what a tick does when there is one:

- ``allow``: the tick's job is enqueued and may run beside it (what every schedule did before
  this policy existed);
- ``skip`` (the default): the tick enqueues nothing; the skipped tick is recorded in the
  schedule's history and announced as ``schedule.skipped``;
- ``queue``: the tick's job is enqueued at once but waits, ``pending``, until every unfinished
  run of the schedule has ended, whatever its end (success, failure or cancel): the database
  holds the wait as links the claim checks, so it holds across every worker.

A manual run is never held back by the policy: someone asked for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from rota.errors import RotaError


class Overlap(str, Enum):
    ALLOW = "allow"
    SKIP = "skip"
    QUEUE = "queue"

    def __str__(self) -> str:
        return self.value


DEFAULT = Overlap.SKIP
CHOICES = tuple(policy.value for policy in Overlap)


def overlap_policy(value: object, error: type[RotaError], label: str = "overlap") -> Overlap:
    """``value`` as a policy; anything but ``"allow"``, ``"skip"`` or ``"queue"`` is ``error``."""
    if isinstance(value, str):
        try:
            return Overlap(value)
        except ValueError:
            pass
    raise error(f"{label} must be one of {', '.join(CHOICES)}, not {value!r}")


@dataclass(frozen=True, slots=True)
class Decision:
    """What a pass does with a schedule's planned ticks: ``enqueue`` some, ``skipped`` the
    others; ``unfinished`` the runs found unfinished; when ``chained``, each tick enqueued waits
    for them and for the ticks before it."""

    enqueue: tuple[datetime, ...]
    skipped: tuple[datetime, ...] = ()
    unfinished: tuple[int, ...] = ()
    chained: bool = False


def decide(policy: Overlap, ticks: Sequence[datetime], unfinished: Sequence[int]) -> Decision:
    """Decide for ``ticks`` (planned in one pass, oldest first) given the ids of the
    schedule's unfinished runs.  Ticks of one pass follow each other as ticks of separate
    passes would: under ``skip`` only the first may start (and only if nothing is unfinished),
    under ``queue`` each waits for the ones before it."""
    ticks, busy = tuple(ticks), tuple(sorted(unfinished))
    if policy is Overlap.ALLOW or not ticks:
        return Decision(ticks, (), busy)
    if policy is Overlap.QUEUE:
        return Decision(ticks, (), busy, chained=True)
    if busy:
        return Decision((), ticks, busy)
    return Decision(ticks[:1], ticks[1:])


def skipped(tick: datetime, unfinished: Sequence[int]) -> dict[str, object]:
    """The history's ``new`` value of a skipped tick: the tick, and the unfinished runs (job
    ids) it gave way to (none: an earlier tick of the same pass)."""
    return {"tick": tick.isoformat(), "unfinished": list(unfinished)}
