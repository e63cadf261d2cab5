"""SqlStore: the ``Store`` protocol on one SQLAlchemy database, for every supported dialect.

It holds no SQL of its own: its sub-stores are the siblings that own the tables involved,
``jobs.py`` (a job's life), ``finished.py`` (retry, prune, fold, counts), ``reads.py``
(inspection), ``cluster.py`` (workers, leases, paused queues), ``schedules.py`` and
``workflow.py`` (workflow steps and signals), ``stuck.py`` (stuck jobs), all over
one shared ``Database``; what concerns the whole database goes to ``database.py``,
``migrate.py``, ``outlook.py``, ``unreadable.py`` and ``signals.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime

from sqlalchemy.engine import Engine

from rota.core.clock import ClockReading
from rota.core.connection import DEFAULT_NAMESPACE, DEFAULT_TABLE_PREFIX, ConnectionSettings
from rota.errors import ConfigError, StoreError
from rota.store import migrate
from rota.store.base import MIGRATION_LOCK_TIMEOUT, CallerConnection
from rota.store.batches import SqlBatches
from rota.store.borrowed import Lender, lending
from rota.store.cluster import SqlCluster
from rota.store.database import Database
from rota.store.edits import SqlEdits
from rota.store.events import EventSink, log_event
from rota.store.finished import SqlFinished
from rota.store.jobs import SqlJobs
from rota.store.outlook import SqlOutlook
from rota.store.reads import SqlReads
from rota.store.schedules import SqlSchedules
from rota.store.schema import Schema, jobs_channel
from rota.store.search import SqlSearch
from rota.store.signals import ListeningConnection
from rota.store.stuck import SqlStuck
from rota.store.unreadable import SqlUnreadable
from rota.store.values import Loan, Outlook, SchemaStatus, ServerInfo, UnreadableRow
from rota.store.workflow import SqlWorkflow


def open_store(
    url: str,
    table_prefix: str = DEFAULT_TABLE_PREFIX,
    connection: ConnectionSettings | None = None,
    events: EventSink = log_event,
    namespace: str = DEFAULT_NAMESPACE,
) -> SqlStore:
    """A store on ``url`` (connections open lazily, at the first call), its connections bounded
    by ``connection`` (``RotaConfig``'s defaults if not given), announcing what it meets to
    ``events`` (logged, if not given), reading and writing the rows of ``namespace``;
    ``ConfigError`` for a URL rota cannot use or a driver that is not installed."""
    return SqlStore(Database(url, table_prefix, connection, events, namespace))


class SqlStore:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = SqlJobs(database)
        self.finished = SqlFinished(database)
        self.cluster = SqlCluster(database)
        self.reads = SqlReads(database, self.cluster)
        self.schedules = SqlSchedules(database)
        self.workflow = SqlWorkflow(database)
        self.batches = SqlBatches(database, self.jobs)
        self.search = SqlSearch(database)
        self.edits = SqlEdits(database)
        self.stuck = SqlStuck(database)
        self._lender = Lender(database)
        self._outlook = SqlOutlook(database, self.jobs, self.schedules)
        self._unreadable = SqlUnreadable(database)

    @property
    def engine(self) -> Engine:
        """For tests and tools that issue SQL of their own; rota itself never does."""
        return self.database.engine

    @property
    def schema(self) -> Schema:
        return self.database.schema

    def connect(self) -> ServerInfo:
        server = self.server_info()
        if server.problem is not None:
            raise ConfigError(server.problem)
        return server

    def server_info(self) -> ServerInfo:
        return self.database.server_info()

    def driver(self) -> tuple[str, str]:
        return self.database.driver()

    def server_clock(self) -> ClockReading | None:
        return self.database.server_clock()

    def unreadable(self, limit: int) -> list[UnreadableRow]:
        return self._unreadable.rows(limit)

    def outlook(self, queues: Sequence[str], tasks: Sequence[str], now: datetime) -> Outlook:
        return self._outlook.look(queues, tasks, now)

    def migrate(self, lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
        return migrate.upgrade(self.database, lock_timeout)

    def schema_status(self) -> SchemaStatus:
        return migrate.schema_status(self.database)

    def require_schema(self) -> None:
        problem = self.schema_status().problem
        if problem is not None:
            raise StoreError(problem)

    def drop_schema(self) -> None:
        migrate.drop(self.database)

    @property
    def namespace(self) -> str:
        return self.database.namespace

    def in_namespace(self, namespace: str) -> SqlStore:
        return SqlStore(self.database.in_namespace(namespace))

    def dispose(self) -> None:
        self.database.engine.dispose()

    def borrow(self, dbapi_connection: object) -> AbstractContextManager[CallerConnection]:
        return self._lender.borrow(dbapi_connection)

    def lend_from(self, source: Callable[[], Loan | None] | None) -> None:
        self.database.lending = None if source is None else lending(self._lender, source)

    def listen_for_jobs(self) -> ListeningConnection | None:
        if not self.database.dialect.announces_new_jobs:
            return None
        return ListeningConnection(self.database, jobs_channel(self.database.table_prefix))
