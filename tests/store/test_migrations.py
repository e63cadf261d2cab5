"""The Alembic migrations build exactly ``schema.py``, on every dialect, and print their DDL."""

from __future__ import annotations

import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import inspect

from rota.cli import main
from rota.store import migrate
from rota.store.dialects import create_engine
from rota.store.schema import build_schema
from tests.conftest import Database


def test_migrations_equal_the_schema(db: Database) -> None:
    engine, dialect = create_engine(db.url)
    migrate.upgrade(engine, dialect, db.prefix)
    migrate.upgrade(engine, dialect, db.prefix)  # a second run changes nothing
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
    assert migrate.current_revision(engine, db.prefix) == migrate.head_revision()
    assert f"ix_{db.prefix}jobs_claim" in indexes
    engine.dispose()


def test_migrate_command_applies_and_reports_the_revision(db: Database) -> None:
    result = CliRunner().invoke(main, ["migrate", "--url", db.url, "--table-prefix", db.prefix])
    assert result.exit_code == 0, result.output
    assert f"schema at revision {migrate.head_revision()}" in result.output
    engine, _ = create_engine(db.url)
    assert {f"{db.prefix}jobs", f"{db.prefix}workers"} <= set(inspect(engine).get_table_names())
    engine.dispose()


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
    assert ddl.count("ENGINE=InnoDB") == 4  # jobs, workers, schedules, leases
    assert "CHARSET=utf8mb4" in ddl and "COLLATE utf8mb4_bin" in ddl
    assert "CREATE INDEX ix_rota_jobs_claim ON rota_jobs (state, queue, priority, run_at)" in ddl
    assert "CREATE UNIQUE INDEX uq_rota_jobs_tick" in ddl


def test_postgres_ddl() -> None:
    result = CliRunner().invoke(
        main, ["migrate", "--sql", "--url", "postgresql://u@h/db", "--table-prefix", "app_"]
    )
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE app_jobs" in result.output
    assert "id BIGSERIAL NOT NULL" in result.output
