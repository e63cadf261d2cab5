"""The tasks a claim may take, named by the key of their set rather than one by one.

A worker claims only the jobs of the tasks it registered.  Sent as ``task IN (...)``, the
names travelled with every claim and every idle look, and the server parsed them each time:
with 10,000 registered tasks a claim took 52 ms instead of 2 on MariaDB (116 ms on
PostgreSQL), and two workers sent 764 MB of SQL in 4.5 minutes.  Instead each set of names is
written once, under the SHA-256 of its sorted names, and a claim asks whether the set holds a
candidate's task: one primary-key lookup per row the claim reads, whatever the number of
tasks.

The lookup is a scalar subquery, not ``EXISTS`` or ``IN (SELECT ...)``: MariaDB turns those
into a semi-join driven by the set's rows, which reads every task of the set and sorts the
jobs found, where the claim must read its index in order and stop at its ``limit``.

Rows are never changed, so a key known to exist stays true; sets are not deleted (a set is as
many rows as its tasks, one per distinct set of names a deploy registers).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterable, Sequence

from sqlalchemy import ColumnElement, literal, select
from sqlalchemy.engine import Connection

from rota.store.database import Database

CHUNK = 1000
"""Rows a statement writes when a set is first written."""


def set_key(tasks: Iterable[str]) -> str:
    """The key of the set of ``tasks`` (nothing written: ``TaskSets.key`` writes it)."""
    return _key(tuple(tasks))


@functools.lru_cache(maxsize=64)
def _key(tasks: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(sorted(set(tasks))).encode("utf-8")).hexdigest()


class TaskSets:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.task_sets
        self._written: set[str] = set()
        """The keys of the sets this process wrote and committed."""
        self._lock = threading.Lock()

    def key(self, tasks: Sequence[str]) -> str:
        """The key of ``tasks``' set, written first if this process has not yet done so (in a
        transaction of its own: call it before a transaction that needs the set).  A set
        written on a connection a caller lends (``Store.lend_from``) is written again next
        time: the caller's transaction may yet roll it back, as a Django test case does."""
        key = set_key(tasks)
        with self._lock:
            if key in self._written:
                return key
            lending = self.database.lending
            lent = lending is not None and lending() is not None
            names = sorted(set(tasks))
            if names:
                self.database.transaction(lambda connection: self._write(connection, key, names))
            if not lent:
                self._written.add(key)
            return key

    def _write(self, connection: Connection, key: str, names: list[str]) -> None:
        insert = self.database.dialect.insert_ignoring_duplicates(self.table)
        rows = [{"set_key": key, "task": task} for task in names]
        for start in range(0, len(rows), CHUNK):
            connection.execute(insert, rows[start : start + CHUNK])

    def holds(self, key: str, task: ColumnElement[str]) -> ColumnElement[bool]:
        """Whether the set of ``key`` holds ``task`` (a column of the statement it goes in)."""
        table = self.table
        member = select(literal(1)).where(table.c.set_key == key, table.c.task == task)
        return member.scalar_subquery().is_not(None)
