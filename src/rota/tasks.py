"""Task definitions: the only code a worker runs, registered in code under a unique name."""

from __future__ import annotations

import difflib
import functools
import inspect
import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from rota.core import checks, definitions
from rota.core import limits as limits_
from rota.core.backoff import ExceptionTypes, RetryPolicy, exception_types
from rota.core.cron import Cron
from rota.core.model import DEFAULT_QUEUE
from rota.core.names import check_name
from rota.core.overlap import overlap_policy
from rota.core.search import check_tags
from rota.errors import ConfigError, InvalidArguments, TaskNotRegistered

MAX_SHAPES = 64
"""Argument shapes a task remembers as fitting; past them it binds each time."""

Handler = Callable[..., Any]


Isolation = Literal["thread", "process"]
"""Where a sync handler's attempt runs: a thread of the worker, or a child process of its own
(``rota.runtime.worker.isolation`` says what crosses to the child)."""
ISOLATIONS: tuple[Isolation, ...] = ("thread", "process")


@dataclass(frozen=True)
class TaskDefinition:
    """A task as code defines it.

    >>> TaskDefinition(name="cleanup", handler=lambda: None, retries=0)
    TaskDefinition(name='cleanup', ...)
    """

    name: str
    handler: Handler
    cron: str | None = None
    tz: str = "UTC"
    overlap: str = "skip"
    """What a tick of the task's schedule does while its previous run is unfinished:
    ``"skip"`` it, ``"queue"`` it behind, or ``"allow"`` both to run (``rota.core.overlap``)."""
    retries: int = 3
    retry_delay: float = 10.0
    retry_cap: float = 3600.0
    timeout: float | None = None
    stuck_after: float | None = None
    """Seconds after which a running attempt whose lease is still renewed is *stuck*
    (``job.stuck``, the dashboard, ``rota check``); ``None``: ``timeout`` plus
    ``rota.core.stuck.STUCK_MARGIN``, or never without a timeout."""
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    unique: bool = False
    """Derive a unique key from the arguments: an identical job already waiting or running
    is returned instead of a second one."""
    isolation: Isolation = "thread"
    """``"process"``: run each attempt of a sync handler in a child process, which a timeout,
    a cancel or a shutdown really stops, and whose crash fails only that attempt
    (``rota.runtime.worker.isolation`` says what crosses to the child)."""
    concurrency_limit: int | None = None
    """At most this many jobs of the task with the same ``concurrency_key`` run at once,
    across every worker (``rota.core.limits``)."""
    concurrency_key: limits_.KeySource | None = None
    """A ``str.format`` template over the handler's arguments, or a callable taking them;
    without one the limit is per task."""
    rate_limit: str | None = None
    """``"<count>/<s|m|h>"``: at most that many starts per period per ``rate_key``."""
    rate_key: limits_.KeySource | None = None
    limits: limits_.FlowLimits | None = field(init=False, repr=False, compare=False)
    retry_on: ExceptionTypes | None = None
    """Retry only exceptions of these types; others fail the job at once (``None``: all)."""
    no_retry_on: ExceptionTypes = ()
    """Fail the job at once on exceptions of these types, even ones ``retry_on`` names.  Both
    filter what the handler raises; a timeout or a lost worker is retried within ``retries``
    whatever they say."""
    max_snoozes: int | None = None
    """How many times a job may ``Snooze``; ``None``: the ``Rota``'s ``max_snoozes``."""
    alert_after_failures: int | None = None
    """A schedule of the task whose last this many ticks failed is *failing*
    (``schedule.failing``; ``schedule.recovered`` at the next success); ``None``: the
    ``Rota``'s ``alert_after_failures``, which is off by default."""
    tags: Sequence[str] = ()
    """Tags every job of the task carries, before those ``queue(tags=...)`` adds."""
    takes_context: bool = field(init=False, repr=False)
    is_async: bool = field(init=False, repr=False)
    signature: inspect.Signature = field(init=False, repr=False, compare=False)
    _fitting: set[tuple[int, tuple[str, ...]]] = field(
        init=False, repr=False, compare=False, default_factory=set
    )
    """Shapes of arguments (how many positional, which keywords) the handler was found to
    accept: binding looks at nothing else, and a worker checks every job it runs."""

    def __post_init__(self) -> None:
        check_name("task", self.name, ConfigError)
        if not callable(self.handler):
            raise ConfigError(f"task {self.name!r}: handler {self.handler!r} is not callable")
        check_name("queue", self.queue, ConfigError)
        label = f"task {self.name!r}:"
        try:
            object.__setattr__(self, "tags", check_tags(self.tags))
        except InvalidArguments as error:
            raise ConfigError(f"{label} {error}") from None
        if self.timeout is not None:
            checks.seconds(self.timeout, ConfigError, f"{label} timeout", positive=True)
        if self.stuck_after is not None:
            checks.seconds(self.stuck_after, ConfigError, f"{label} stuck_after", positive=True)
        checks.check_int(self.retries, ConfigError, f"{label} retries", 0)
        checks.seconds(self.retry_delay, ConfigError, f"{label} retry_delay")
        checks.seconds(self.retry_cap, ConfigError, f"{label} retry_cap")
        checks.check_priority(self.priority, ConfigError, f"{label} priority")
        if self.max_snoozes is not None:
            checks.check_int(self.max_snoozes, ConfigError, f"{label} max_snoozes", 0)
        if self.alert_after_failures is not None:
            checks.check_int(
                self.alert_after_failures, ConfigError, f"{label} alert_after_failures", 1
            )
        for option in ("retry_on", "no_retry_on"):
            if getattr(self, option) is not None:
                kinds = exception_types(getattr(self, option), ConfigError, f"{label} {option}")
                object.__setattr__(self, option, kinds)
        try:
            signature = inspect.signature(self.handler)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"task {self.name!r}: cannot read the handler's signature") from exc
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "takes_context", bool(signature.parameters))
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.handler))
        check_isolation(self.name, self.handler, self.isolation, self.is_async)
        flow = limits_.flow_limits(
            self.name,
            signature,
            self.concurrency_limit,
            self.concurrency_key,
            self.rate_limit,
            self.rate_key,
        )
        object.__setattr__(self, "limits", flow)
        if self.cron is not None:
            Cron(self.cron, self.tz)
        overlap_policy(self.overlap, ConfigError, f"{label} overlap")
        if self.cron is not None and self.argument_problem((), {}) is not None:
            raise ConfigError(
                f"task {self.name!r} has a cron schedule, so its handler is called with no "
                f"arguments: {self.argument_problem((), {})}"
            )

    @functools.cached_property
    def logger(self) -> logging.Logger:
        """``rota.task.<name>``, the logger of its handlers' ``ctx.logger``."""
        return logging.getLogger(f"rota.task.{self.name}")

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            retries=self.retries,
            delay=self.retry_delay,
            cap=self.retry_cap,
            retry_on=self.retry_on,
            no_retry_on=self.no_retry_on,
            max_snoozes=self.max_snoozes,
        )

    @functools.cached_property
    def description(self) -> str:
        """The settings two workers must agree on (``core.definitions``), as one line."""
        return definitions.describe({name: getattr(self, name) for name in definitions.DESCRIBED})

    def __repr__(self) -> str:
        return f"TaskDefinition(name={self.name!r}, ...)"

    def argument_problem(
        self, args: Sequence[Any], kwargs: Mapping[str, Any], options: Collection[str] = ()
    ) -> str | None:
        """Why the handler cannot be called with these arguments, or ``None`` when it can.

        A keyword the handler has no parameter for is named first, with the parameter nearest
        to it, or the nearest of ``options`` (the caller's own keywords, such as ``queue()``'s
        ``delay``): a misspelt one is otherwise reported as the parameter it failed to give.
        """
        if not self.takes_context:
            if args or kwargs:
                hints = [unexpected(name, (), options) for name in kwargs]
                return "; ".join(
                    [
                        "the handler takes no parameters, so it takes no arguments",
                        *filter(None, hints),
                    ]
                )
            return None
        shape = (len(args), tuple(sorted(kwargs)))
        if shape in self._fitting:
            return None
        problem = binding_problem(self.signature, args, kwargs, options)
        if problem is None and len(self._fitting) < MAX_SHAPES:
            self._fitting.add(shape)
        return problem

    def check_arguments(
        self, args: Sequence[Any], kwargs: Mapping[str, Any], options: Collection[str] = ()
    ) -> None:
        """Raise ``InvalidArguments`` naming the argument the handler would refuse."""
        problem = self.argument_problem(args, kwargs, options)
        if problem is not None:
            raise InvalidArguments(f"task {self.name!r}: {problem}")

    def call(self, ctx: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not self.takes_context:
            return self.handler()
        return self.handler(ctx, *args, **kwargs)


def binding_problem(
    signature: inspect.Signature,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Collection[str],
) -> str | None:
    """Why ``signature`` (its first parameter the context) refuses these arguments, if it does:
    keywords it has no parameter for, each with the nearest name, else what binding says."""
    parameters = signature.parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        named = [
            p.name
            for p in list(parameters.values())[1:]
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        hints = [unexpected(name, named, options) for name in kwargs if name not in parameters]
        if hints:
            return "; ".join(hints)
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError as exc:
        return str(exc)
    return None


def unexpected(name: str, parameters: Collection[str], options: Collection[str]) -> str:
    """``got an unexpected keyword argument 'subjet' (did you mean 'subject'?)``, naming the
    parameter or option closest to ``name`` if one is close; ``""`` when neither is and
    ``parameters`` is empty (a handler without parameters says so itself)."""
    close = difflib.get_close_matches(name, [*parameters, *options], n=1)
    if not close:
        return f"got an unexpected keyword argument {name!r}" if parameters else ""
    option = close[0] not in parameters
    return (
        f"got an unexpected keyword argument {name!r} (did you mean "
        f"{'the enqueue option ' if option else ''}{close[0]!r}?)"
    )


class TaskOptions(TypedDict, total=False):
    """``@rota.task`` keywords: ``TaskDefinition``'s fields, whose defaults apply."""

    name: str
    cron: str | None
    tz: str
    overlap: str
    retries: int
    retry_delay: float
    retry_cap: float
    timeout: float | None
    stuck_after: float | None
    queue: str
    priority: int
    unique: bool
    isolation: Isolation
    concurrency_limit: int | None
    concurrency_key: limits_.KeySource | None
    rate_limit: str | None
    rate_key: limits_.KeySource | None
    retry_on: ExceptionTypes | type[BaseException] | None
    no_retry_on: ExceptionTypes | type[BaseException]
    max_snoozes: int | None
    alert_after_failures: int | None
    tags: Sequence[str]


class TaskRegistry:
    """Task definitions by name; a name is defined once, the handler decides which."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskDefinition] = {}
        self.also_serve: Callable[[], Iterable[str]] = tuple
        """Queues a worker serves by default beside its tasks' own, asked at each use (a
        Django project's ``TASKS[...]["QUEUES"]``, which a task may be sent to by name)."""

    def add(self, definition: TaskDefinition) -> None:
        existing = self._tasks.get(definition.name)
        if existing is not None and existing.handler is not definition.handler:
            raise ConfigError(f"task {definition.name!r} is already defined by another handler")
        self._tasks[definition.name] = definition

    def get(self, name: str) -> TaskDefinition:
        try:
            return self._tasks[name]
        except KeyError:
            raise TaskNotRegistered(f"task {name!r} is not registered in this process") from None

    def find(self, name: str) -> TaskDefinition | None:
        return self._tasks.get(name)

    def by_handler(self, handler: Handler) -> TaskDefinition:
        for definition in self._tasks.values():
            if definition.handler is handler:
                return definition
        raise TaskNotRegistered(
            f"{handler!r} is not a registered task; decorate it with @rota.task"
        )

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def queues(self) -> list[str]:
        declared = (task.queue for task in self._tasks.values())
        return sorted({DEFAULT_QUEUE, *declared, *self.also_serve()})

    def __iter__(self) -> Iterator[TaskDefinition]:
        return iter(self._tasks.values())


def check_isolation(task: str, handler: Any, isolation: object, is_async: bool) -> None:
    """Refuse, when a task is defined, an isolation a child process could not carry out."""
    if isolation not in ISOLATIONS:
        raise ConfigError(
            f"task {task!r}: isolation must be one of {ISOLATIONS}, got {isolation!r}"
        )
    if isolation == "thread":
        return
    if is_async:
        raise ConfigError(
            f"task {task!r}: isolation='process' runs sync handlers only; an async handler is "
            "cancelled on the worker's event loop"
        )
    module = getattr(handler, "__module__", None)
    qualname = getattr(handler, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        raise ConfigError(
            f"task {task!r}: isolation='process' needs a handler a child process can import by "
            f"name (a module-level function), not {handler!r}: closures, lambdas and functions "
            "defined inside functions do not cross to a child process"
        )
