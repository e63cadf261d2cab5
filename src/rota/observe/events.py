"""Events: one structured ``logging`` record each, and the user hooks they call.

Every event is named by an ``EventName`` member; ``emit``, ``log`` and ``on`` refuse any other
name.  A lifecycle event (``emit``, ``job``) is a record on the event log's logger
(``rota.events``) that carries ``event`` and the job fields as attributes (for structured
handlers) and repeats them in its message, as ``key=value`` text or, with
``log_format="json"``, one JSON object.  That message is escaped where it is made
(``rota.core.escaping``): a value holding a newline or a terminal escape (an error message, a
name from the database) stays inside its line whatever handler writes it, the application's
own included.  An operational event (``log``: a lost connection, a loop's error, a clock's
skew) is a sentence on the logger of the module that met it, with ``event`` and its fields as
attributes.  ``rota.store.events.log_event`` makes both kinds of record: it is the one place
that makes a record carrying ``event``.  Hooks registered with ``Rota.on`` receive an
``Event`` with the values as they are, run where they cannot hurt the worker
(``observe.hooks``).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rota.core.escaping import visible, visible_json
from rota.core.events import EventName
from rota.core.model import Job, JobRef
from rota.errors import ConfigError
from rota.observe.hooks import DEFAULT_HOOK_TIMEOUT, HookRunner, bound, is_async, sync_call
from rota.observe.logs import RENDERED, chosen_format
from rota.store.events import log_event

JOB_FIELDS = ("job_id", "task", "queue", "attempt", "schedule", "duration_ms")


PROCESS_LANE = "process"
"""The lane key of every event of no job: one lane, so they are heard in the order emitted."""


@dataclass(frozen=True)
class Event:
    """What a hook receives: the event's name, when it happened, and its fields."""

    name: EventName
    at: datetime
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def job_id(self) -> int | None:
        return self.fields.get("job_id")

    @property
    def task(self) -> str | None:
        return self.fields.get("task")

    @property
    def queue(self) -> str | None:
        return self.fields.get("queue")

    @property
    def attempt(self) -> int | None:
        return self.fields.get("attempt")

    @property
    def error(self) -> str | None:
        return self.fields.get("error")


Hook = Callable[[Event], "Awaitable[None] | None"]


def logfmt(value: Any) -> str:
    """``value`` as one logfmt value: escaped to be visible, and double-quoted when it holds a
    space, ``=`` or a quote (a quote inside shown as ``\\x22``, like the other escapes), so an
    error message like ``x task=other`` cannot pass for a field of its own."""
    if type(value) is int:
        return str(value)
    text = visible(value if isinstance(value, str) else str(value))
    if text and " " not in text and "=" not in text and '"' not in text:
        return text
    return '"' + text.replace('"', "\\x22") + '"'


class EventLog:
    def __init__(
        self,
        logger: logging.Logger | None = None,
        log_format: str | None = None,
        hook_timeout: float = DEFAULT_HOOK_TIMEOUT,
    ) -> None:
        self.logger = logger or logging.getLogger("rota.events")
        self.log_format = chosen_format(log_format)
        self._hooks: dict[str, list[Hook]] = defaultdict(list)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.runner = HookRunner(hook_timeout)
        """Where hooks run (``observe.hooks``): never inline, never on the worker's loop for a
        sync one."""

    def on(self, name: EventName | str, hook: Hook) -> None:
        """Call ``hook(event)`` for every event ``name`` (``"*"``: every event); ``ConfigError``
        for a name rota never emits."""
        key = name if name == "*" else event_name(name)
        if not callable(hook):
            raise ConfigError(f"hook {hook!r} is not callable")
        with self._lock:
            self._hooks[key].append(hook)

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Where async hooks run when an event is emitted outside the event loop's thread."""
        self._loop = loop

    def heard(self, event: EventName, level: int) -> bool:
        """Whether anything takes ``event`` at ``level``: the logger or a hook."""
        return self.logger.isEnabledFor(level) or event in self._hooks or "*" in self._hooks

    def emit(self, event: EventName | str, level: int = logging.INFO, **fields: Any) -> None:
        """A lifecycle event: its record on this log's logger, then its hooks; ``ConfigError``
        for a name that is not an ``EventName``."""
        name = event_name(event)
        if not self.heard(name, level):
            return
        if self.logger.isEnabledFor(level):
            extra = dict.fromkeys(JOB_FIELDS)
            extra.update(fields)
            extra[RENDERED] = True
            log_event(self.logger, name, level, "%s", self._message(name, fields), **extra)
        self._hear(name, fields)

    def log(
        self,
        logger: logging.Logger,
        event: EventName | str,
        level: int,
        message: str,
        *args: object,
        exc_info: BaseException | None = None,
        **fields: Any,
    ) -> None:
        """An operational event, worded ``message % args`` on a module's own ``logger``, then
        its hooks (a ``rota.store.events.EventSink``)."""
        name = event_name(event)
        log_event(logger, name, level, message, *args, exc_info=exc_info, **fields)
        self._hear(name, fields)

    def job(
        self,
        event: EventName | str,
        job: Job | JobRef,
        level: int = logging.INFO,
        **fields: Any,
    ) -> None:
        name = event_name(event)
        if not self.heard(name, level):
            return  # before the fields are gathered: a worker emits two a job
        self.emit(
            name,
            level,
            job_id=job.id,
            task=job.task,
            queue=job.queue,
            attempt=job.attempt,
            schedule=job.schedule,
            **fields,
        )

    def _hear(self, name: EventName, fields: Mapping[str, Any]) -> None:
        """Call the hooks of ``name`` and of every event."""
        hooks = self._hooks.get(name, []) + self._hooks.get("*", [])
        if hooks:
            happened = Event(name, datetime.now(timezone.utc), dict(fields))
            for hook in hooks:
                self._call(hook, happened)

    def _message(self, event: EventName, fields: Mapping[str, Any]) -> str:
        shown = {key: value for key, value in fields.items() if value is not None}
        if self.log_format == "json":
            return visible_json(
                json.dumps({"event": event.value, **shown}, default=str, ensure_ascii=False)
            )
        return " ".join([event.value, *[f"{key}={logfmt(value)}" for key, value in shown.items()]])

    def _call(self, hook: Hook, event: Event) -> None:
        key = event.job_id if event.job_id is not None else PROCESS_LANE
        if is_async(hook):
            self.runner.schedule(event.name, bound(hook, event), self._loop)
        else:
            self.runner.submit(key, event.name, sync_call(hook, event, self.runner))


def event_name(name: object) -> EventName:
    """The ``EventName`` that ``name`` is or spells; ``ConfigError`` for any other, naming the
    nearest name if one is close."""
    if isinstance(name, EventName):
        return name
    try:
        return EventName(name)
    except ValueError:
        pass
    close = difflib.get_close_matches(str(name), [member.value for member in EventName], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown event {name!r}{hint} (rota.EventName lists every event)")
