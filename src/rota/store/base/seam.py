"""The ``Store`` protocol itself: its sub-stores, and what concerns the database as a whole."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from rota.core.clock import ClockReading
from rota.errors import StoreError
from rota.store.base.cluster import ClusterStore
from rota.store.base.jobs import CallerConnection, FinishedStore, JobStore
from rota.store.base.reads import ReadStore
from rota.store.base.schedules import ScheduleStore
from rota.store.base.search import EditStore, SearchStore
from rota.store.base.stuck import StuckStore
from rota.store.base.workflow import BatchStore, WorkflowStore
from rota.store.values import Loan, Outlook, SchemaStatus, ServerInfo, UnreadableRow

MIGRATION_LOCK_TIMEOUT = 120.0
"""Seconds ``migrate`` waits for another process's migration of the same tables."""


class StatementTooLarge(StoreError):
    """A write larger than the database takes in one statement (MySQL's ``max_allowed_packet``),
    refused by the server or found so before it was sent (``JobStore.complete``): repeating it as
    it is cannot succeed.  ``job_ids`` names the jobs whose outcome alone is too large, when
    known; none when the server refused a statement of several, which smaller ones may pass."""

    def __init__(self, message: str, *, job_ids: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.job_ids = tuple(job_ids)


class NewJobSignal(Protocol):
    """A connection of its own that hears jobs inserted by any process as they commit; one
    thread waits on it, any thread may interrupt it."""

    def wait(self, timeout: float) -> bool:
        """Whether new jobs were announced within ``timeout`` seconds; ``False`` at once once
        interrupted; a ``StoreError`` when the connection is lost."""
        ...

    def interrupt(self) -> None: ...

    def close(self) -> None: ...


class Store(Protocol):
    """One database of rota's tables, by sub-store; what concerns the database as a whole
    (reaching it, its schema, its clock, its connections) is the store's own."""

    @property
    def jobs(self) -> JobStore: ...

    @property
    def finished(self) -> FinishedStore: ...

    @property
    def reads(self) -> ReadStore: ...

    @property
    def cluster(self) -> ClusterStore: ...

    @property
    def schedules(self) -> ScheduleStore: ...

    @property
    def workflow(self) -> WorkflowStore: ...

    @property
    def batches(self) -> BatchStore: ...

    @property
    def search(self) -> SearchStore: ...

    @property
    def edits(self) -> EditStore: ...

    @property
    def stuck(self) -> StuckStore: ...

    def connect(self) -> ServerInfo:
        """Reach the server and check that rota can run on it (``ConfigError`` if not)."""
        ...

    def server_info(self) -> ServerInfo:
        """Reach the server and describe it, even one rota cannot run on (see ``problem``):
        which host answered (``reached``) and whether it takes writes (``read_only``), since
        after a failover a URL may lead to a replica that answers reads and refuses writes."""
        ...

    def driver(self) -> tuple[str, str]:
        """The DB-API driver's name and version; needs no connection."""
        ...

    def migrate(self, lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
        """Bring the schema to this release's newest revision; safe when several processes
        start together.  Return the revisions applied, oldest first (none when it was up to
        date, or newer than this release: a rolling deploy's old processes must still start).

        Migrations of one database and table prefix take turns under a lock; ``StoreError``
        when it is not free within ``lock_timeout`` seconds.
        """
        ...

    def schema_status(self) -> SchemaStatus: ...

    def require_schema(self) -> None:
        """A missing or old schema is a ``StoreError`` saying to run ``rota migrate``, raised
        at connect rather than as "no such table" from the first query."""
        ...

    def drop_schema(self) -> None:
        """Drop rota's tables of this prefix and everything else ``migrate`` made, deleting
        their rows: for tests that make a schema per prefix and throw it away."""
        ...

    @property
    def namespace(self) -> str:
        """The service whose rows this store reads and writes (``Rota(namespace=)``)."""
        ...

    def in_namespace(self, namespace: str) -> Store:
        """This store on the same connections, reading and writing ``namespace``'s rows: what a
        tool uses to show another service (the dashboard's namespace filter)."""
        ...

    def dispose(self) -> None:
        """Close the pooled connections; the next call opens new ones."""
        ...

    def borrow(self, dbapi_connection: object) -> AbstractContextManager[CallerConnection]:
        """A ``CallerConnection`` over a DB-API connection its owner lends (Django's), for
        ``enqueue(connection=...)`` in the transaction the owner holds open: rota never
        commits, rolls back nor closes it.  The connection must come from this store's driver
        (``ConfigError`` otherwise)."""
        ...

    def lend_from(self, source: Callable[[], Loan | None] | None) -> None:
        """Run each transaction of the store's on the connection ``source`` lends at that
        moment (``None``: on the store's own), in a savepoint of its owner's transaction:
        rota's reads and writes then see, and join, what the owner has not committed (a test
        inside Django's ``TestCase``). ``None`` stops it."""
        ...

    def unreadable(self, limit: int) -> list[UnreadableRow]:
        """Up to ``limit`` rows this rota cannot read: of workers, schedules, and jobs that
        have not finished (a state rota does not know is not a finished one)."""
        ...

    def server_clock(self) -> ClockReading | None:
        """A reading of the database server's clock (UTC) bracketed by this host's monotonic
        clock, or ``None`` where it is this host's (SQLite)."""
        ...

    def outlook(self, queues: Sequence[str], tasks: Sequence[str], now: datetime) -> Outlook:
        """One read for an idle worker: a claimable job due in ``queues`` of ``tasks``, an
        expired lease, and the next tick (``store.outlook``)."""
        ...

    def listen_for_jobs(self) -> NewJobSignal | None:
        """A new listening connection, or ``None`` where the backend announces no jobs (MySQL,
        SQLite: workers poll)."""
        ...
