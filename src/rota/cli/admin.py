"""``rota migrate``, ``rota worker`` and ``rota prune``: setting up and running rota."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from datetime import timedelta
from types import FrameType

import click

from rota.cli.common import connected, database_options, url_options
from rota.cli.loading import AppCommand, child_command, load_app
from rota.config import DEFAULT_GRACE, RotaConfig, default_url
from rota.core.events import EventName
from rota.errors import RotaError
from rota.observe.events import EventLog
from rota.observe.logs import configure_logging, formatter, held
from rota.runtime.host.process import Served
from rota.runtime.host.supervisor import supervise, watch_supervisor
from rota.store import head_revision, open_store, upgrade_sql
from rota.store.base import MIGRATION_LOCK_TIMEOUT
from rota.store.urls import scrub

DAY = timedelta(days=1)
logger = logging.getLogger("rota")


@click.command()
@database_options
@click.option("--sql", "as_sql", is_flag=True, help="Print the DDL instead of applying it.")
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    default=MIGRATION_LOCK_TIMEOUT,
    show_default=True,
    help="Seconds to wait for another migration of these tables (their prefix) to end.",
)
def migrate(url: str | None, table_prefix: str, as_sql: bool, lock_timeout: float) -> None:
    """Apply the schema migrations, or print their SQL for review."""
    target = url or default_url()
    try:
        if as_sql:
            click.echo(upgrade_sql(target, table_prefix))
            return
        store = open_store(target, table_prefix)
        try:
            applied = store.migrate(lock_timeout)
            revision = store.schema_status().revision
        finally:
            store.dispose()
        click.echo(migrated(applied, revision))
    except RotaError as error:
        raise click.ClickException(f"{error.code}: {scrub(str(error), target)}") from error


def migrated(applied: list[str], revision: str | None) -> str:
    """Whether ``rota migrate`` changed anything, so that a deploy log shows it."""
    if applied:
        return f"applied {', '.join(applied)}; schema at revision {revision}"
    head = head_revision()
    if revision == head:
        return f"already up to date at revision {revision}"
    return f"schema at revision {revision}, newer than this rota knows ({head}); nothing applied"


@click.command(
    cls=AppCommand,
    hosted_help="Run a worker for the project's Rota until SIGINT or SIGTERM.",
)
@click.argument("app", required=False)
@click.option("--concurrency", type=click.IntRange(min=1), default=None)
@click.option(
    "--queues",
    default=None,
    help="Comma-separated queues this worker serves (default: every queue of its tasks).",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds running jobs get to finish after SIGTERM before they return to pending.",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run this many worker processes, replacing any that dies.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    help="Serve this worker's Prometheus metrics on this port (at the app's metrics_host, "
    "default 127.0.0.1); needs rota[dashboard].  Not with --processes above 1.",
)
@click.option("--log-level", default="info", show_default=True)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="json: one JSON object per log line (default: the app's log_format, else text).",
)
def worker(
    app: str | None,
    concurrency: int | None,
    queues: str | None,
    grace: float,
    processes: int,
    metrics_port: int | None,
    log_level: str,
    log_format: str | None,
) -> None:
    """Run a worker for the Rota at APP (MODULE:ATTR or PATH.py:ATTR; required unless an
    application runs this command with its own Rota, as ``manage.py rota``) until SIGINT or
    SIGTERM."""
    if metrics_port is not None and processes > 1:
        raise click.UsageError("--metrics-port serves one process: not with --processes above 1")
    with until_started():
        served = Served(parse_queues(queues), concurrency, metrics_port)
        run_worker(app, served, grace, processes, log_level, log_format)


class StoppedWhileStarting(BaseException):
    """SIGINT or SIGTERM before the worker's own handlers were installed: a clean stop.

    A ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except Exception`` of the
    application's import (or of ``load_app``) takes it for a failure."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def until_started() -> Iterator[None]:
    """Make SIGINT and SIGTERM end the command with exit code 0 until the worker (or the
    supervisor) installs its own handlers: a stop during a slow import of the application, or
    while the demo queues its first jobs, is what the signal asked for, not a failure, and it
    interrupts that work rather than waiting for it.  Those handlers replace these; none is
    restored here."""

    def raise_stopped(signum: int, frame: FrameType | None) -> None:
        raise StoppedWhileStarting(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, raise_stopped)
    try:
        yield
    except StoppedWhileStarting as stopped:
        EventLog(logger).log(
            logger,
            EventName.WORKER_START_INTERRUPTED,
            logging.INFO,
            "stopped by %s before the worker started",
            signal.Signals(stopped.signum).name,
        )
        sys.exit(0)


def parse_queues(queues: str | None) -> tuple[str, ...]:
    return tuple(name.strip() for name in (queues or "").split(",") if name.strip())


def run_worker(
    app: str | None,
    served: Served,
    grace: float,
    processes: int,
    log_level: str,
    log_format: str | None,
) -> None:
    handler = configure_logging(log_level, log_format or "text")
    with held():
        rota = load_app(app)
        log_format = log_format or rota.events.log_format
        handler.setFormatter(formatter(log_format))
    rota.events.log_format = log_format
    try:
        rota.check_database_named()
    except RotaError as error:
        raise click.ClickException(f"{error.code}: {error}") from error
    if processes > 1:
        child = [
            *child_command(app),
            "worker",
            *([app] if app is not None else []),
            "--grace",
            str(grace),
            "--log-level",
            log_level,
            "--log-format",
            log_format,
        ]
        if served.concurrency is not None:
            child += ["--concurrency", str(served.concurrency)]
        if served.queues:
            child += ["--queues", ",".join(served.queues)]
        sys.exit(supervise(child, processes, grace=grace))
    watch_supervisor(rota.events)
    try:
        rota.run(
            grace=grace,
            queues=served.queues,
            concurrency=served.concurrency,
            metrics_port=served.metrics_port,
        )
        rota.close()
        leave(0)
    except Exception as error:
        if log_format != "json":
            if isinstance(error, RotaError):
                message = scrub(str(error), rota.config.url)
                raise click.ClickException(f"{error.code}: {message}") from error
            raise
        log_failure(error, rota.config.url, rota.events)
        sys.exit(1)


def leave(code: int) -> None:
    """End the process of a worker that has stopped: the exit hooks (``atexit``, exporters'
    flushes, ``weakref.finalize``) and the log handlers run, the interpreter's teardown does
    not.  That teardown adds from a fifth of a second to seconds on a loaded host to a shutdown
    that must end within its grace, and around a handler thread that ignored its interruption
    it may not end at all; the thread is abandoned as SIGKILL would abandon it."""
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def log_failure(error: Exception, url: str, events: EventLog) -> None:
    """Why the worker stopped, as a record: with JSON logs, even a crash is one JSON line."""
    failed = EventName.WORKER_FAILED
    if isinstance(error, RotaError):
        message = scrub(str(error), url)
        events.log(logger, failed, logging.ERROR, "%s: %s", error.code, message, code=error.code)
    else:
        events.log(
            logger,
            failed,
            logging.ERROR,
            "the worker stopped on an unexpected error: %r",
            error,
            exc_info=error,
        )


@click.command()
@url_options("$DEMO_DATABASE_URL, else sqlite:///demo.db")
def demo(url: str | None) -> None:
    """Run the demo service (rota.demo) until Ctrl-C; on SQLite unless given a URL."""
    if url:
        os.environ["DEMO_DATABASE_URL"] = url
    with until_started():
        from rota.demo.main import main as run_demo  # here: it builds its Rota from the env

        sys.exit(run_demo())


@click.command()
@database_options
@click.option(
    "--succeeded-days",
    type=click.FloatRange(min=0, min_open=True),
    default=RotaConfig.succeeded_retention / DAY,
    show_default=True,
    help="Keep succeeded jobs this long.",
)
@click.option(
    "--failed-days",
    type=click.FloatRange(min=0, min_open=True),
    default=RotaConfig.failed_retention / DAY,
    show_default=True,
    help="Keep failed and cancelled jobs this long.",
)
def prune(url: str | None, table_prefix: str, succeeded_days: float, failed_days: float) -> None:
    """Delete finished jobs older than their retention, in small batches."""
    kept = {"succeeded_retention": succeeded_days * DAY, "failed_retention": failed_days * DAY}
    with connected(url, table_prefix, **kept) as rota:
        pruned = rota.prune()
    click.echo(f"pruned {pruned} finished job(s)")
