"""The Alembic migrations build exactly ``schema.py``, on every dialect, and print their DDL;
``rota migrate`` says what it applied; without auto-migrate a missing schema is named as such."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from click.testing import CliRunner
from sqlalchemy import inspect, text

from rota import JobState, Rota, RotaError, StoreError, TaskDefinition, TransientStoreError
from rota.cli import main
from rota.core.model import NewJob
from rota.store import migrate, open_store
from rota.store.migrate import MIGRATIONS
from rota.store.schema import build_schema
from tests.conftest import Database
from tests.helpers import sql_store
from tests.store.contract.support import EMPTY

OPERATIONS = Path(__file__).parents[2] / "docs" / "operations.md"


def test_migrations_equal_the_schema(db: Database) -> None:
    store = open_store(db.url, db.prefix)
    engine = store.engine
    store.migrate()
    assert store.migrate() == [], "a second run changes nothing"
    schema = build_schema(db.prefix)
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={
                "compare_type": True,
                "include_name": lambda name, kind, _: (
                    kind != "table" or (name or "").startswith(db.prefix)
                ),
            },
        )
        diff = [
            change
            for change in compare_metadata(context, schema.metadata)
            if not (change[0] == "remove_table" and change[1].name.endswith("alembic_version"))
        ]
        indexes = {index["name"] for index in inspect(connection).get_indexes(schema.jobs.name)}
    assert diff == []
    assert store.schema_status().revision == migrate.head_revision()
    assert f"ix_{db.prefix}jobs_claim" in indexes
    store.dispose()


# Every revision, oldest first, as Alembic's own script directory lists them.
REVISIONS = [s.revision for s in reversed(list(ScriptDirectory(str(MIGRATIONS)).walk_revisions()))]


def _migrate_command(db: Database) -> str:
    result = CliRunner().invoke(main, ["migrate", "--url", db.url, "--table-prefix", db.prefix])
    assert result.exit_code == 0, result.output
    return result.output


def _upgrade_to(db: Database, revision: str) -> None:
    """Leave the schema at ``revision``, as an older release of rota would have."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["table_prefix"] = db.prefix
    engine = db.engine()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()


def test_migrate_command_applies_and_reports_the_revision(db: Database) -> None:
    head = migrate.head_revision()
    assert REVISIONS[-1] == head
    output = _migrate_command(db)
    assert output.strip() == f"applied {', '.join(REVISIONS)}; schema at revision {head}"
    engine = db.engine()
    tables = set(inspect(engine).get_table_names())
    assert {f"{db.prefix}jobs", f"{db.prefix}workers", f"{db.prefix}schedules"} <= tables
    engine.dispose()
    assert _migrate_command(db).strip() == f"already up to date at revision {head}"


def test_migrate_command_applies_only_what_is_missing(db: Database) -> None:
    _upgrade_to(db, REVISIONS[0])
    head = migrate.head_revision()
    output = _migrate_command(db)
    assert output.strip() == f"applied {', '.join(REVISIONS[1:])}; schema at revision {head}"


def test_a_schema_from_a_newer_release_is_left_alone(db: Database) -> None:
    """A rolling deploy's old processes keep starting once the new release has migrated."""
    _migrate_command(db)
    engine = db.engine()
    with engine.begin() as connection:
        connection.execute(text(f"UPDATE {db.table('alembic_version')} SET version_num = '9999'"))
    engine.dispose()
    output = _migrate_command(db)
    head = migrate.head_revision()
    assert output.strip() == (
        f"schema at revision 9999, newer than this rota knows ({head}); nothing applied"
    )
    for auto_migrate in (True, False):
        rota = Rota(db.url, table_prefix=db.prefix, auto_migrate=auto_migrate)
        assert rota.jobs() == []
        rota.store.dispose()


def test_without_auto_migrate_a_missing_or_old_schema_says_to_run_rota_migrate(
    db: Database,
) -> None:
    rota = Rota(db.url, table_prefix=db.prefix, auto_migrate=False, connect_timeout=5)
    try:
        with pytest.raises(StoreError) as missing:
            rota.jobs()
        assert type(missing.value) is StoreError  # permanent: not retried as unreachable
        assert str(missing.value).startswith(f"no rota schema with table prefix {db.prefix!r}")
        assert str(missing.value).endswith("run `rota migrate`")
        with pytest.raises(StoreError, match="run `rota migrate`"):
            asyncio.run(rota.start())

        _upgrade_to(db, REVISIONS[0])
        with pytest.raises(StoreError) as behind:
            rota.jobs()
        needs = f"at revision {REVISIONS[0]}, this rota needs {migrate.head_revision()}"
        assert needs in str(behind.value)
        assert str(behind.value).endswith("run `rota migrate`")

        _migrate_command(db)
        assert rota.jobs() == []
    finally:
        rota.store.dispose()


def test_mysql_ddl_for_a_dba_to_review() -> None:
    url = "mysql+pymysql://app:s3cret-pw@db.example.com/app"
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            "from rota.cli import main; main()",
            "migrate",
            "--sql",
            "--url",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    ddl = process.stdout
    assert "s3cret-pw" not in ddl + process.stderr
    assert "CREATE TABLE rota_jobs" in ddl
    assert "id BIGINT NOT NULL AUTO_INCREMENT" in ddl
    assert "DATETIME(6)" in ddl and "TIMESTAMP" not in ddl.replace("CURRENT_TIMESTAMP", "")
    tables = build_schema("rota_").metadata.tables
    assert ddl.count("ENGINE=InnoDB") == ddl.count("CREATE TABLE") - 1, "all but alembic's"
    for table in tables:
        assert f"CREATE TABLE {table} (" in ddl
    unique_key = "uq_rota_jobs_unique_key ON rota_jobs (namespace, task, unique_key)"
    assert f"CREATE UNIQUE INDEX {unique_key}" in ddl
    listed = set(re.findall(r"^  \| `(rota_\w+)`", OPERATIONS.read_text(), re.MULTILINE))
    assert listed == {*tables, "rota_alembic_version"}, "the DBA notes list every table"
    assert "CHARSET=utf8mb4" in ddl and "COLLATE utf8mb4_bin" in ddl
    claim = "ix_rota_jobs_claim ON rota_jobs (namespace, state, queue, priority, run_at)"
    assert f"CREATE INDEX {claim}" in ddl
    assert "CREATE UNIQUE INDEX uq_rota_jobs_tick" in ddl


def test_postgres_ddl() -> None:
    result = CliRunner().invoke(
        main, ["migrate", "--sql", "--url", "postgresql://u@h/db", "--table-prefix", "app_"]
    )
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE app_jobs" in result.output
    assert "id BIGSERIAL NOT NULL" in result.output


def test_0003_scopes_unique_keys_per_task_on_a_database_with_jobs(db: Database) -> None:
    """A database at 0002 upgrades in place, its keyed job kept and still deduplicating; a
    unique key then belongs to its task."""
    store = open_store(db.url, db.prefix)
    engine = store.engine
    config = migrate._config(db.prefix)
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        connection.execute(
            text(
                f"INSERT INTO {db.prefix}jobs (task, queue, priority, state, payload, attempt, "
                "run_at, created_at, cancel_requested, unique_key) VALUES ('invoice', 'default', "
                '0, \'pending\', \'{"v": 1, "args": [], "kwargs": {}}\', 0, '
                "'2026-01-01 00:00:00', '2026-01-01 00:00:00', :no, 'order:1')"
            ),
            {"no": False},
        )
        (kept,) = connection.execute(text(f"SELECT id FROM {db.prefix}jobs")).scalars()
        connection.commit()
    assert store.schema_status().revision == "0002"
    old = Rota(db.url, table_prefix=db.prefix, auto_migrate=False)
    with pytest.raises(RotaError, match="run `rota migrate`"):
        old.jobs()
    old.store.dispose()

    rota = Rota(db.url, table_prefix=db.prefix)
    rota.define_task(TaskDefinition(name="invoice", handler=lambda ctx: None))
    rota.define_task(TaskDefinition(name="receipt", handler=lambda ctx: None))
    assert rota.paused_queues() == [], "the queues table exists"
    invoice = rota.queue("invoice", unique_key="order:1")
    assert store.schema_status().revision == migrate.head_revision()
    assert invoice == kept, "the job queued before the upgrade still holds its key"
    assert rota.job(kept).state is JobState.PENDING
    assert rota.queue("receipt", unique_key="order:1") != invoice
    assert rota.queue("invoice", unique_key="order:1") == invoice
    with engine.connect() as connection:
        (index,) = [
            index
            for index in inspect(connection).get_indexes(f"{db.prefix}jobs")
            if index["name"] == f"uq_{db.prefix}jobs_unique_key"
        ]
    assert index["column_names"] == ["namespace", "task", "unique_key"] and index["unique"]
    rota.store.dispose()
    engine.dispose()


def test_0010_tells_ticks_from_manual_runs_on_a_database_with_jobs(db: Database) -> None:
    """At 0009 a manual run had no ``scheduled_at``: up, the tick stays a tick and the old
    manual run is manual; a manual run at the tick's moment then fits beside it; down again,
    that run loses its moment, as the older key cannot hold it."""
    store = open_store(db.url, db.prefix)
    engine = store.engine
    config = migrate._config(db.prefix)
    at = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
    row = {"task": "t", "queue": "default", "priority": 0, "state": "pending", "payload": EMPTY}
    row |= {"attempt": 0, "run_at": at, "created_at": at, "schedule": "nightly"}
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0009")
        for moment in (at, None):
            connection.execute(
                build_schema(db.prefix).jobs.insert(), [row | {"scheduled_at": moment}]
            )
        connection.commit()
        command.upgrade(config, "0010")
        command.upgrade(config, "head")
        connection.commit()
    tick, old_manual = store.reads.jobs()[::-1]
    assert (tick.scheduled_at, tick.manual) == (at, False)
    assert (old_manual.scheduled_at, old_manual.manual) == (None, True)
    again = NewJob("t", EMPTY, tick.run_at, schedule="nightly", scheduled_at=tick.scheduled_at)
    (manual,) = store.jobs.enqueue([replace(again, manual=True)], tick.run_at)
    with pytest.raises(StoreError):
        store.jobs.enqueue([again], tick.run_at)
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0009")
        connection.commit()
        moments = connection.execute(
            text(f"SELECT id, scheduled_at FROM {db.prefix}jobs ORDER BY id")
        ).all()
    assert [(row[0], row[1] is None) for row in moments] == [
        (tick.id, False),
        (old_manual.id, True),
        (manual, True),
    ]
    store.dispose()


def test_an_alembic_failure_is_a_store_error(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Alembic's own errors (revisions changed under it by a migration elsewhere, as on a
    multi-writer Galera where the migration lock is per node) leave rota as a ``StoreError``."""

    def fails(*arguments: object, **options: object) -> None:
        raise CommandError("Can't locate revision identified by '0099'")

    monkeypatch.setattr(command, "upgrade", fails)
    rota = Rota(db.url, table_prefix=db.prefix)
    with pytest.raises(StoreError, match="the schema migration failed: Can't locate revision"):
        rota.jobs()
    sql_store(rota).engine.dispose()


def test_a_connection_lost_during_a_migration_is_a_transient_error(
    server_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lost session took its migration lock with it: rota does not try to release it on
    the dead connection (which raised SQLAlchemy's PendingRollbackError out of the worker's
    start), and the loss is the ``TransientStoreError`` a worker waits out."""
    mariadb = server_db.backend == "mariadb"

    def loses_its_connection(config: Config, *arguments: object, **options: object) -> None:
        connection = config.attributes["connection"]
        ask = "SELECT CONNECTION_ID()" if mariadb else "SELECT pg_backend_pid()"
        session = connection.execute(text(ask)).scalar_one()
        other = server_db.engine()
        with other.begin() as killer:
            killer.execute(
                text(f"KILL {session}" if mariadb else f"SELECT pg_terminate_backend({session})")
            )
        other.dispose()
        connection.execute(text("SELECT 1"))

    monkeypatch.setattr(command, "upgrade", loses_its_connection)
    rota = Rota(server_db.url, table_prefix=server_db.prefix)
    with pytest.raises(TransientStoreError):
        rota.store.migrate()
    sql_store(rota).engine.dispose()
