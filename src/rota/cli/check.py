"""``rota check``: can this database run rota, and is any job waiting for a worker that is gone?"""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import click
from rich.console import RenderableType
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from rota.app import LIVE_WORKER_WINDOW, Rota
from rota.cli.common import (
    build_rota,
    current_revision,
    database_options,
    emit_json,
    fail,
    json_option,
    pairs,
    render,
    require_sqlite_file,
    schema_problem,
    scrub,
)
from rota.cli.tables import NAME, WORDS, Column, Grid
from rota.config import default_url
from rota.core.model import JobState, WorkerInfo
from rota.display import NONE, span
from rota.errors import ConfigError, DatabaseUnavailable, RotaError, StoreError
from rota.store import migrate as migrations
from rota.store.dialects import check_server, describe_url


@dataclass
class Report:
    database: str
    server: str | None = None
    driver: str | None = None
    driver_version: str | None = None
    skip_locked: str | None = None
    schema: str | None = None
    schema_state: str | None = None
    head: str = field(default_factory=migrations.head_revision)
    workers: list[WorkerInfo] = field(default_factory=list)
    stranded: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checked_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@click.command()
@database_options
@json_option
def check(url: str | None, table_prefix: str, as_json: bool) -> None:
    """Check the database: server, driver, SKIP LOCKED, schema, live workers, stranded jobs.

    A job is stranded when it is pending and no live worker (heartbeat within two minutes)
    registers its task for its queue. Exits 1 when the database is unreachable or its schema
    is missing or behind this version of rota.
    """
    target = url or default_url()
    rota = build_rota(target, table_prefix)  # first: it turns a malformed URL into a usage error
    report = Report(database=describe_url(target))
    try:
        examine(rota, report)
    except RotaError as error:
        report.problems.append(f"{error.code}: {scrub(str(error), target)}")
    finally:
        rota.store.engine.dispose()
    if as_json:
        emit_json(as_dict(report))
        if report.problems:
            click.get_current_context().exit(1)
        return
    show(report)
    if report.problems:
        raise fail("\n".join(report.problems))


def examine(rota: Rota, report: Report) -> None:
    store = rota.store
    report.driver, report.driver_version = driver(rota)
    require_sqlite_file(rota)
    try:
        with store.dialect.translate_errors(), store.engine.connect() as connection:
            report.server, report.skip_locked = server(connection, rota)
    except StoreError as error:
        raise DatabaseUnavailable(f"cannot reach the {report.database}: {error}") from error
    if store.dialect.name == "mysql" and report.skip_locked == "no":
        report.problems.append(
            f"{ConfigError.code}: {report.server} has no SKIP LOCKED; rota needs MySQL 8.0.1+ "
            "or MariaDB 10.6+"
        )
    report.schema = current_revision(rota)
    report.schema_state = migrations.schema_state(report.schema, report.head)
    problem = schema_problem(report.schema, report.head, rota)
    if problem is not None:
        report.problems.append(problem)
        return
    report.workers = store.workers(report.checked_at - LIVE_WORKER_WINDOW)
    report.stranded = stranded(rota, report.workers)


def server(connection: Connection, rota: Rota) -> tuple[str, str]:
    """The server's product and version, and how it keeps two workers off one job."""
    dialect = rota.store.dialect
    if dialect.name == "sqlite":
        return check_server(connection, dialect), "single writer"
    try:
        return check_server(connection, dialect), "yes"
    except ConfigError:
        version = ".".join(str(part) for part in connection.dialect.server_version_info or ())
        mariadb = bool(getattr(connection.dialect, "is_mariadb", False))
        return f"{'MariaDB' if mariadb else 'MySQL'} {version}", "no"


def driver(rota: Rota) -> tuple[str, str]:
    """The DB-API driver's name and version, from its distribution's metadata if it has one.

    PyMySQL's ``__version__`` imitates mysqlclient's, hence the metadata first.
    """
    dialect = rota.store.engine.dialect
    module = dialect.loaded_dbapi
    top = module.__name__.partition(".")[0]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return dialect.driver, importlib.metadata.version(top)
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return dialect.driver, version
    return dialect.driver, f"{platform.python_version()} (Python standard library)"


def stranded(rota: Rota, workers: list[WorkerInfo]) -> list[dict[str, Any]]:
    """Pending jobs no live worker can claim, counted by task and queue."""
    jobs = rota.store.schema.jobs
    query = (
        select(jobs.c.task, jobs.c.queue, func.count())
        .where(jobs.c.state == JobState.PENDING.value)
        .group_by(jobs.c.task, jobs.c.queue)
        .order_by(jobs.c.task, jobs.c.queue)
    )
    with rota.store.dialect.translate_errors(), rota.store.engine.connect() as connection:
        rows = connection.execute(query).all()
    registered = {task for worker in workers for task in worker.tasks}
    claimable = {(task, queue) for w in workers for task in w.tasks for queue in w.queues}
    return [
        {
            "task": task,
            "queue": queue,
            "pending": int(count),
            "reason": (
                "no live worker registers the task"
                if task not in registered
                else "no live worker with the task serves the queue"
            ),
        }
        for task, queue, count in rows
        if (task, queue) not in claimable
    ]


def as_dict(report: Report) -> dict[str, Any]:
    return {
        "ok": not report.problems,
        "problems": report.problems,
        "database": report.database,
        "server": report.server,
        "driver": {"name": report.driver, "version": report.driver_version},
        "skip_locked": report.skip_locked,
        "schema": {
            "revision": report.schema,
            "head": report.head,
            "state": report.schema_state,
        },
        "workers": [
            {
                "id": worker.id,
                "host": worker.host,
                "pid": worker.pid,
                "queues": list(worker.queues),
                "tasks": list(worker.tasks),
                "concurrency": worker.concurrency,
                "started_at": worker.started_at,
                "heartbeat_at": worker.heartbeat_at,
                "heartbeat_age_seconds": (report.checked_at - worker.heartbeat_at).total_seconds(),
            }
            for worker in report.workers
        ],
        "stranded_jobs": report.stranded,
        "checked_at": report.checked_at,
    }


def show(report: Report) -> None:
    facts = [("database", report.database)]
    if report.driver is not None:
        facts.append(("driver", f"{report.driver} {report.driver_version}"))
    if report.server is None:
        facts.append(("server", "unreachable"))
        render(pairs(facts))
        return
    schema = {
        "up to date": f"{report.schema} (up to date)",
        "behind": f"{report.schema} (behind: this rota needs {report.head})",
        "newer": f"{report.schema} (newer than this rota's {report.head})",
    }.get(report.schema_state or "", f"missing (this rota needs {report.head})")
    facts += [
        ("server", report.server),
        ("skip locked", report.skip_locked or "-"),
        ("schema", schema),
    ]
    if report.schema_state in ("up to date", "newer"):
        facts.append(("live workers", str(len(report.workers))))
        facts.append(("stranded jobs", str(sum(row["pending"] for row in report.stranded))))
    items: list[RenderableType] = [pairs(facts)]
    if report.workers:
        workers = Grid(
            Column("host", NAME),
            Column("pid"),
            Column("queues", NAME, drop=2),
            Column("tasks", drop=3),
            Column("up", drop=4),
            Column("last heartbeat", drop=1),
        )
        for worker in report.workers:
            workers.add_row(
                worker.host,
                str(worker.pid),
                list(worker.queues) or NONE,
                str(len(worker.tasks)),
                span(report.checked_at - worker.started_at),
                f"{span(report.checked_at - worker.heartbeat_at)} ago",
            )
        items += ["", "Live workers:", workers]
    if report.stranded:
        jobs = Grid(
            Column("task", NAME),
            Column("queue", NAME, drop=1),
            Column("pending"),
            Column("why", WORDS, drop=2),
        )
        for row in report.stranded:
            jobs.add_row(row["task"], row["queue"], str(row["pending"]), row["reason"])
        items += ["", "Pending jobs no live worker can run:", jobs]
    render(*items)
