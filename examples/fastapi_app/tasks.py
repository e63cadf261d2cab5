"""The service's tasks and the ``Rota`` that runs them.

``create_rota`` registers the tasks on a ``Rota`` built from ``Settings``, so that the
application, a separate ``rota worker examples.fastapi_app.main:rota`` and each test get one
of their own (a test's on its own database and clock).  ``Outbox`` stands in for a mail
provider's client: a real one raises ``ConnectionError`` or ``TimeoutError`` when the provider
cannot be reached, and those are what ``send_welcome`` is retried on; any other error fails
the job at once.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from rota import Clock, JobContext, Rota

from .settings import Settings

KEEP = 1000
"""How many sent messages the outbox remembers; ``prune_outbox`` forgets older ones."""


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    to: str
    subject: str


@dataclass
class Outbox:
    """Sent messages, newest last; safe from the worker's handler threads."""

    sent: list[Message] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, to: str, subject: str) -> str:
        with self._lock:
            message = Message(f"msg-{next(self._ids)}", to, subject)
            self.sent.append(message)
        return message.id

    def prune(self, keep: int) -> int:
        with self._lock:
            pruned = max(len(self.sent) - keep, 0)
            del self.sent[:pruned]
        return pruned


outbox = Outbox()


def send_welcome(ctx: JobContext, email: str, name: str) -> dict[str, str | int]:
    """Mail a new user; what it returns is kept as the job's result."""
    message_id = outbox.send(email, f"Welcome, {name}!")
    ctx.logger.info("sent %s to %s", message_id, email)
    return {"message_id": message_id, "attempt": ctx.attempt}


def prune_outbox() -> dict[str, int]:
    """Every quarter of an hour: forget all but the newest ``KEEP`` sent messages."""
    return {"pruned": outbox.prune(KEEP)}


def create_rota(
    settings: Settings, *, clock: Clock | None = None, poll_interval: float = 0.5
) -> Rota:
    """A ``Rota`` on the settings' database with the service's tasks registered; ``clock`` and
    ``poll_interval`` are for tests."""
    rota = Rota(
        settings.database_url,
        table_prefix=settings.table_prefix,
        clock=clock,
        poll_interval=poll_interval,
    )
    rota.task(retries=3, retry_delay=5, retry_on=(ConnectionError, TimeoutError))(send_welcome)
    rota.task(cron="*/15 * * * *")(prune_outbox)
    return rota
