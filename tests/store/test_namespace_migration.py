"""Revision 0011 on a database that a release without namespaces filled: every row lands in the
default namespace and keeps working there; another namespace sees none of it; going down is
refused while another namespace holds rows, and keeps the default namespace's otherwise."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from alembic import command
from sqlalchemy import text

from rota import JobState, Rota, StoreError
from rota.store import migrate, open_store
from rota.testing import FakeClock
from tests.conftest import Database
from tests.store.contract.support import EMPTY

AT = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)


def _old_rows(db: Database) -> dict[str, str]:
    """What a release at 0010 left: a pending keyed job, a finished one, a schedule with its
    history, a paused queue, a lease, a limit key and a tally, each as plain SQL."""
    p = db.prefix
    stamp = "'2026-01-01 03:00:00'"
    return {
        "jobs": (
            f"INSERT INTO {p}jobs (task, queue, priority, state, payload, attempt, run_at, "
            f"created_at, cancel_requested, unique_key, snoozes, has_dependencies) VALUES "
            f"('invoice', 'mail', 0, 'pending', :payload, 0, {stamp}, {stamp}, :no, 'order:1', "
            f"0, :no), ('invoice', 'mail', 0, 'succeeded', :payload, 1, {stamp}, {stamp}, :no, "
            f"NULL, 0, :no)"
        ),
        "schedules": (
            f"INSERT INTO {p}schedules (name, task, cron, tz, payload, queue, priority, source, "
            f"state, next_run_at, created_at, updated_at, version, failures, failing) VALUES "
            f"('nightly', 'nightly', '0 3 * * *', 'UTC', :payload, 'default', 0, 'code', "
            f"'active', {stamp}, {stamp}, {stamp}, 0, 0, :no)"
        ),
        "schedule_history": (
            f"INSERT INTO {p}schedule_history (schedule, at, action, actor) VALUES "
            f"('nightly', {stamp}, 'created', 'code')"
        ),
        "queues": (
            f"INSERT INTO {p}queues (name, paused, updated_at) VALUES ('mail', :yes, {stamp})"
        ),
        "leases": f"INSERT INTO {p}leases (name, owner, until) VALUES ('prune', 'w1', {stamp})",
        "limits": f"INSERT INTO {p}limits ({_quoted(db, 'key')}, tokens) VALUES ('invoice:a', 1)",
        "tallies": (
            f"INSERT INTO {p}tallies (state, queue, task, jobs) VALUES "
            "('succeeded', 'mail', 'invoice', 4)"
        ),
    }


def _quoted(db: Database, name: str) -> str:
    return "`key`" if db.backend == "mariadb" else f'"{name}"'


def test_0011_puts_every_old_row_in_the_default_namespace(db: Database) -> None:
    store = open_store(db.url, db.prefix)
    config = migrate._config(db.prefix)
    with store.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0010")
        for statement in _old_rows(db).values():
            values = {"no": False, "yes": True, "payload": EMPTY}
            connection.execute(text(statement), values)
        connection.commit()
        command.upgrade(config, "0011")
        connection.commit()
        namespaces = {
            table: set(
                connection.execute(text(f"SELECT DISTINCT namespace FROM {db.prefix}{table}"))
                .scalars()
                .all()
            )
            for table in _old_rows(db)
        }
    assert namespaces == {table: {"default"} for table in _old_rows(db)}
    store.dispose()

    clock = FakeClock(AT)
    default = Rota(db.url, table_prefix=db.prefix, clock=clock)
    billing = Rota(db.url, table_prefix=db.prefix, clock=clock, namespace="billing")
    listed = default.jobs()
    assert (listed[0].name, listed[0].status) == ("nightly", "pending")
    (pending,) = [line for line in listed if isinstance(line.id, int)]
    assert (pending.name, pending.status) == ("invoice", "paused")
    assert default.paused_queues() == ["mail"]
    # 0014 empties the tallies for the fold to take the rows in again, by hour: the old tally of
    # four, which no row backed, gives way to the one finished row.
    assert default.counts().by_task["invoice"][JobState.SUCCEEDED] == 1
    assert [change.action for change in default.schedule_history("nightly")] == ["created"]
    keyed = default.queue("invoice", unique_key="order:1", queue="mail")
    assert keyed == pending.id, "the old job still holds its key"

    assert billing.jobs() == [] and billing.paused_queues() == []
    assert billing.counts().by_task == {}
    assert billing.queue("invoice", unique_key="order:1", queue="mail") != keyed
    with store.engine.connect() as connection:
        config.attributes["connection"] = connection
        with pytest.raises(StoreError, match="namespaces other than 'default'"):
            command.downgrade(config, "0010")
        connection.rollback()
        connection.execute(text(f"DELETE FROM {db.prefix}jobs WHERE namespace = 'billing'"))
        connection.commit()
        command.downgrade(config, "0010")
        connection.commit()
        paused = connection.execute(text(f"SELECT name FROM {db.prefix}queues")).scalars().all()
    assert paused == ["mail"]
    for rota in (default, billing):
        rota.store.dispose()
    store.dispose()
