"""The storage seam: one method per operation, each taking ``now`` instead of reading a clock.

This protocol is the only door to the database: the façade, the runtime, the CLI and the
dashboard call these methods and never SQL, an engine or a driver (a lint rule keeps
SQLAlchemy inside ``rota.store``).  A ``Store`` holds its operations in sub-stores named after
what they touch, ``store.jobs.claim(...)``, ``store.reads.job(...)``, ``store.cluster``,
``store.finished``, ``store.schedules``, and keeps only what concerns the whole database.
Methods are synchronous and thread-safe; the runtime calls them from its database threads so
the event loop never waits on a socket.  Every method translates driver errors into
``StoreError`` (``TransientStoreError`` when a plain retry can succeed) or, for a value the
database refused, ``InvalidArguments``.

::

    seam.py        Store: its sub-stores; connect, migrate, clock, unreadable rows, listening
    jobs.py        JobStore (a job's life) and FinishedStore (retry, prune, fold, counts)
    reads.py       ReadStore: one job, listings, counts per period, stranded jobs
    cluster.py     ClusterStore: workers, named leases, paused queues
    schedules.py   ScheduleStore: schedules by name, firing each tick once
    workflow.py    WorkflowStore: a job's workflow steps and signals; BatchStore: batches
"""

from __future__ import annotations

from rota.store.base.cluster import ClusterStore
from rota.store.base.jobs import CallerConnection, FinishedStore, JobStore
from rota.store.base.reads import DEPENDENTS_LISTED, ReadStore
from rota.store.base.schedules import ScheduleStore
from rota.store.base.seam import (
    MIGRATION_LOCK_TIMEOUT,
    NewJobSignal,
    StatementTooLarge,
    Store,
)
from rota.store.base.workflow import BatchStore, WorkflowStore

__all__ = [
    "DEPENDENTS_LISTED",
    "MIGRATION_LOCK_TIMEOUT",
    "BatchStore",
    "CallerConnection",
    "ClusterStore",
    "FinishedStore",
    "JobStore",
    "NewJobSignal",
    "ReadStore",
    "ScheduleStore",
    "StatementTooLarge",
    "Store",
    "WorkflowStore",
]
