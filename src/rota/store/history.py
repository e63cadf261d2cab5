"""Schedules' history: one row per change, written in the transaction that makes the change, so
the history never claims a change that did not happen nor misses one that did."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from rota.core.schedules import ScheduleAction, ScheduleChange
from rota.store.database import Database


class ScheduleHistory:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.schedule_history

    def record(self, connection: Connection, changes: Sequence[ScheduleChange]) -> None:
        if changes:
            namespace = {"namespace": self.database.namespace}
            rows = [change_values(change) | namespace for change in changes]
            connection.execute(insert(self.table), rows)

    def of(self, name: str, limit: int | None) -> list[ScheduleChange]:
        """The schedule's changes, newest first."""
        table = self.table
        mine = self.database.mine(table)
        query = select(table).where(mine, table.c.schedule == name).order_by(table.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        return [to_change(row._mapping) for row in self.database.fetch(query)]

    def prune(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` entries older than ``before``, oldest first; how many."""
        table = self.table
        old = (self.database.mine(table), table.c.at < before)
        oldest = select(table.c.id).where(*old).order_by(table.c.id).limit(limit)

        def work(connection: Connection) -> int:
            ids = list(connection.execute(oldest).scalars())
            if not ids:
                return 0
            return int(connection.execute(delete(table).where(table.c.id.in_(ids))).rowcount)

        return self.database.transaction(work)


def to_change(data: Mapping[Any, Any]) -> ScheduleChange:
    return ScheduleChange(
        schedule=data["schedule"],
        at=data["at"],
        action=ScheduleAction(data["action"]),
        actor=data["actor"],
        old=json.loads(data["old"]) if data["old"] else None,
        new=json.loads(data["new"]) if data["new"] else None,
    )


def change_values(change: ScheduleChange) -> dict[str, Any]:
    def encoded(value: Mapping[str, Any] | None) -> str | None:
        return None if value is None else json.dumps(dict(value), sort_keys=True)

    return {
        "schedule": change.schedule,
        "at": change.at,
        "action": change.action.value,
        "actor": change.actor,
        "old": encoded(change.old),
        "new": encoded(change.new),
    }
