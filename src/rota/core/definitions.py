"""Two live workers of one namespace that define a task differently.

Code is the source of truth for definitions, and each worker syncs its own at start: when two
releases of one service run side by side, each start would rewrite the other's cron in
silence.  So each worker registers how it defines each task (``describe``, in its worker row),
and the differences between live workers are reported: by the worker that starts into them (a
``worker.definition_conflict`` event), by ``rota check`` and by the dashboard.  A rolling
deploy shows one until its last old worker stops, which is what an operator should see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rota.core.model import WorkerInfo

SEPARATOR = "; "
DESCRIBED = (
    *("cron", "tz", "queue", "priority", "retries", "retry_delay", "retry_cap", "timeout"),
    *("isolation", "concurrency_limit", "rate_limit", "max_snoozes", "alert_after_failures"),
    *("overlap", "stuck_after"),
)
"""What of a task's definition is compared: its settings, not its handler, whose module name
depends on how the process was started (``__main__`` or a module path)."""


def describe(values: Mapping[str, object]) -> str:
    """``values`` as one comparable line, ``cron='*/5 * * * *'; tz='UTC'; ...``."""
    return SEPARATOR.join(f"{name}={value!r}" for name, value in values.items())


def differences(first: str, second: str) -> list[str]:
    """The settings two descriptions disagree on, ``cron: '0 3 * * *' / '0 4 * * *'``."""
    ours, theirs = _settings(first), _settings(second)
    return [
        f"{name}: {ours.get(name, '-')} / {theirs.get(name, '-')}"
        for name in dict.fromkeys([*ours, *theirs])
        if ours.get(name) != theirs.get(name)
    ]


def _settings(description: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in description.split(SEPARATOR) if item)
    return {name: value for name, _, value in pairs}


@dataclass(frozen=True, slots=True)
class DefinitionConflict:
    """One task that two live workers of a namespace define differently."""

    task: str
    worker: str
    other: str
    differences: tuple[str, ...]

    def fields(self) -> dict[str, str]:
        """The ``worker.definition_conflict`` event's fields."""
        return {
            "worker": self.worker,
            "task": self.task,
            "other": self.other,
            "differences": "; ".join(self.differences),
        }

    def message(self) -> str:
        return (
            f"task {self.task!r} is defined differently by live workers {self.worker} and "
            f"{self.other} ({'; '.join(self.differences)}); each start syncs its own "
            "definition, so deploy one definition"
        )


def conflicts(workers: Sequence[WorkerInfo], of: str | None = None) -> list[DefinitionConflict]:
    """Each task that two of ``workers`` define differently, against the first worker (by id)
    of its first definition; with ``of``, only those of that worker against the others."""
    by_task: dict[str, dict[str, WorkerInfo]] = {}
    for worker in sorted(workers, key=lambda w: w.id):
        for task, description in worker.definitions.items():
            by_task.setdefault(task, {}).setdefault(description, worker)
    own = next((worker for worker in workers if worker.id == of), None)
    if of is not None and own is None:
        return []
    found: list[DefinitionConflict] = []
    for task, seen in sorted(by_task.items()):
        if len(seen) < 2:
            continue
        if own is None:
            base, first = next(iter(seen.items()))
        elif task in own.definitions:
            base, first = own.definitions[task], own
        else:
            continue
        for description, other in seen.items():
            if description != base:
                changed = tuple(differences(base, description))
                found.append(DefinitionConflict(task, first.id, other.id, changed))
    return found
