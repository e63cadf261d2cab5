"""A ``queue()`` request and how it becomes a row.

``Enqueue`` holds exactly the arguments and options of ``Rota.queue``; ``build`` resolves its
task, binds and checks the arguments and works out queue, priority, unique key and ``run_at``.
All of it is pure but for the one lookup of the queue a live worker registered a task under,
for a task known here only by name, which the caller passes in.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from rota.core import checks, payload
from rota.core.events import EventName
from rota.core.model import DEFAULT_QUEUE, MAX_JOB_ID, NewJob, WorkerInfo
from rota.core.names import check_name
from rota.core.search import check_meta, check_seconds, check_tags
from rota.errors import InvalidArguments, StoreError
from rota.tasks import Handler, TaskDefinition, TaskRegistry

if TYPE_CHECKING:
    from rota.observe.events import EventLog

logger = logging.getLogger("rota")
MAX_DEPENDENCIES = 1000
"""Dependencies one job may have: each is a row written and locked at enqueue."""
CONNECTION = "connection"
"""``queue()``'s own keyword, besides ``Enqueue``'s options."""


class Enqueue:
    """A job for ``Rota.queue_many``, built like a ``Rota.queue`` call.

    >>> rota.queue_many([Enqueue(send_email, "a@example.com"), Enqueue("report", delay=60)])
    [101, 102]
    """

    __slots__ = (
        *("after", "args", "debounce", "delay", "depends_on", "kwargs", "meta", "priority"),
        *("queue", "run_at", "tags", "task", "unique_for", "unique_key"),
    )

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
        depends_on: Sequence[int] | None = None,
        after: Sequence[int] | None = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        meta: Mapping[str, Any] | None = None,
        debounce: float | timedelta | None = None,
        unique_for: float | timedelta | None = None,
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
        self.depends_on = depends_on
        self.after = after
        self.tags = tags
        self.meta = meta
        self.debounce = debounce
        self.unique_for = unique_for

    def __repr__(self) -> str:
        return f"Enqueue({self.task!r}, args={self.args!r}, kwargs={self.kwargs!r})"


OPTIONS = tuple(sorted({*Enqueue.__slots__, CONNECTION} - {"task"}))
"""The reserved keywords of ``queue()``: one misspelt reaches the handler, whose refusal of
it names the option meant."""


@dataclass(frozen=True)
class Target:
    """The task a request names: its name, its definition here if any, the queue it goes to."""

    name: str
    definition: TaskDefinition | None
    queue: str


def resolve(
    task: str | Handler,
    registry: TaskRegistry,
    live: Callable[[], Iterable[WorkerInfo]],
    events: EventLog,
) -> Target:
    """A registered handler or name, or a name only another service defines: then its jobs go
    to the queue a ``live`` worker registered it under, else (or if that cannot be read) to
    ``default``, announced as ``job.unknown_task``."""
    definition = registry.find(task) if isinstance(task, str) else registry.by_handler(task)
    if definition is not None:
        return Target(definition.name, definition, definition.queue)
    name = check_name("task", task, InvalidArguments)
    try:
        queue = next((w.task_queues[name] for w in live() if name in w.task_queues), None)
    except StoreError:
        queue = None
    if queue is None:
        events.log(
            logger,
            EventName.JOB_UNKNOWN_TASK,
            logging.WARNING,
            "task %r is not registered here nor by any live worker; the job will wait",
            name,
            task=name,
        )
    return Target(name, None, queue or DEFAULT_QUEUE)


def build(
    requests: Sequence[Enqueue],
    targets: Callable[[str | Handler], Target],
    now: datetime,
    max_payload_bytes: int,
    trace: str | None = None,
) -> list[NewJob]:
    """Every request checked and turned into a row, or an ``InvalidArguments`` for the first
    that cannot be: nothing is written for a batch with one bad request."""
    batch = _Batch(now, max_payload_bytes, trace)
    return [batch.job(request, targets(request.task)) for request in requests]


class _Batch:
    """One ``build``: what depends only on the task, or on the task and the shape of the
    arguments, is worked out once per batch rather than once per row (a ``queue_many`` of
    1,000 jobs of one task binds one signature and builds one retry policy, not 1,000)."""

    def __init__(self, now: datetime, max_payload_bytes: int, trace: str | None) -> None:
        self.now = now
        self.max_payload_bytes = max_payload_bytes
        self.trace = trace
        self.fitting: set[tuple[str, int, tuple[str, ...]]] = set()
        """(task, positional count, keyword names) the handler was found to accept: whether
        a signature binds depends on nothing else."""
        self.max_attempts: dict[str, int] = {}

    def check_arguments(self, target: Target, definition: TaskDefinition, request: Enqueue) -> None:
        shape = (target.name, len(request.args), tuple(request.kwargs))
        if shape not in self.fitting:
            definition.check_arguments(request.args, request.kwargs, OPTIONS)
            self.fitting.add(shape)

    def attempts(self, target: Target, definition: TaskDefinition) -> int:
        found = self.max_attempts.get(target.name)
        if found is None:
            found = self.max_attempts[target.name] = definition.policy.max_attempts
        return found

    def job(self, request: Enqueue, target: Target) -> NewJob:
        definition = target.definition
        if definition is not None:
            self.check_arguments(target, definition, request)
        if request.priority is not None:
            checks.check_priority(request.priority, InvalidArguments)
        if request.queue is not None:
            check_name("queue", request.queue, InvalidArguments)
        encoded = payload.encode(
            request.args, request.kwargs, max_bytes=self.max_payload_bytes, trace=self.trace
        )
        unique_key = request.unique_key
        if unique_key is None and definition is not None and definition.unique:
            unique_key = f"{target.name}:{hashlib.sha256(encoded.encode()).hexdigest()[:40]}"
        if unique_key is not None:
            check_name("unique_key", unique_key, InvalidArguments)
        kept = keeping(request, unique_key)
        flow = definition.limits if definition is not None else None
        # Without the definition here the keys stay unset; the worker that claims the job
        # fills them in (rota.store.limits).
        concurrency_key, rate_key = (
            flow.keys(request.args, request.kwargs) if flow else (None, None)
        )
        return NewJob(
            task=target.name,
            payload=encoded,
            run_at=run_at(request, self.now, kept.debounce),
            queue=target.queue if request.queue is None else request.queue,
            priority=request.priority if request.priority is not None else _priority(definition),
            max_attempts=self.attempts(target, definition) if definition else None,
            unique_key=unique_key,
            depends_on=dependencies(request.depends_on),
            after=dependencies(request.after, "after"),
            concurrency_key=concurrency_key,
            rate_key=rate_key,
            tags=tags(definition, request.tags),
            meta=None if request.meta is None else check_meta(request.meta),
            unique_for=kept.unique_for,
            debounce=kept.debounce,
        )


def dependencies(given: object, option: str = "depends_on") -> tuple[int, ...]:
    """``depends_on`` (or ``after``) as stored: job ids in the order given, each once (whether
    they exist is the store's to check, in the transaction that writes the job)."""
    if given is None:
        return ()
    if not isinstance(given, (list, tuple)):
        raise InvalidArguments(f"{option} is a list of job ids, got {type(given).__name__}")
    for item in given:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 < item <= MAX_JOB_ID:
            shown = repr(item) if isinstance(item, int) else type(item).__name__
            raise InvalidArguments(f"{option} holds job ids (positive ints), got {shown}")
    ids = tuple(dict.fromkeys(given))
    if len(ids) > MAX_DEPENDENCIES:
        raise InvalidArguments(
            f"a job waits for at most {MAX_DEPENDENCIES} jobs ({option}), not {len(ids)}"
        )
    return ids


def _priority(definition: TaskDefinition | None) -> int:
    return definition.priority if definition is not None else 0


class Kept(NamedTuple):
    """How a unique key holds: ``debounce`` and ``unique_for``, in whole seconds."""

    debounce: int | None
    unique_for: int | None


def tags(definition: TaskDefinition | None, given: object) -> tuple[str, ...]:
    """The task's tags (checked when it was defined), then those the call adds."""
    own = tuple(definition.tags) if definition is not None else ()
    return own if given is None else check_tags([*own, *check_tags(given)])


UNKEPT = Kept(None, None)


def keeping(request: Enqueue, unique_key: str | None) -> Kept:
    """``debounce`` and ``unique_for`` checked: each needs a unique key to act on."""
    if request.debounce is None and request.unique_for is None:
        return UNKEPT
    kept = Kept(
        check_seconds("debounce", request.debounce),
        check_seconds("unique_for", request.unique_for),
    )
    if unique_key is None and (kept.debounce or kept.unique_for):
        option = "debounce" if kept.debounce else "unique_for"
        raise InvalidArguments(f"{option} acts on a unique key: give unique_key= too")
    return kept


def run_at(request: Enqueue, now: datetime, debounce: int | None = None) -> datetime:
    if debounce is not None:
        if request.delay is not None or request.run_at is not None:
            raise InvalidArguments("give one of delay, run_at and debounce")
        return now + timedelta(seconds=debounce)
    if request.delay is not None and request.run_at is not None:
        raise InvalidArguments("give one of delay, run_at and debounce")
    if request.run_at is not None:
        return checks.moment(request.run_at, InvalidArguments, "run_at")
    return now if request.delay is None else checks.later(now, request.delay, InvalidArguments)


def task_names(requests: Sequence[Enqueue]) -> list[str]:
    return [r.task if isinstance(r.task, str) else r.task.__name__ for r in requests]
