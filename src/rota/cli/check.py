"""``rota check``: can this database run rota (reached, writable), is any job waiting for a worker
that is gone or stuck in a live one, is any schedule failing, and is any row one rota cannot
read?

Its exit code tells a script or a probe which: 0 healthy, 1 problems found, 2 the check could
not be made (the database unreachable or refusing the connection, its schema missing or
behind), as a usage error is 2. A dead worker is no problem of its own: its jobs go back to
pending when their leases expire, and a job that then waits for a worker is a stranded one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import click
from rich.console import RenderableType

from rota.app import Rota
from rota.cli.common import (
    build_rota,
    database_options,
    emit_json,
    fail,
    json_option,
    pairs,
    reaching,
    render,
)
from rota.cli.tables import NAME, WORDS, Column, Grid
from rota.config import default_url
from rota.core.connection import DEFAULT_NAMESPACE
from rota.core.definitions import DefinitionConflict, conflicts
from rota.core.escaping import visible
from rota.core.model import WorkerInfo
from rota.core.schedules import Schedule, ScheduleState
from rota.core.stranded import Stranded
from rota.core.stuck import RunningJob
from rota.display import NONE, span
from rota.errors import ConfigError, DatabaseUnavailable, ErrorCode, RotaError, StoreError
from rota.store import head_revision
from rota.store.urls import database_file, describe_url, scrub
from rota.store.values import UnreadableRow

EVER = datetime.min.replace(tzinfo=timezone.utc)
"""Every worker row is live at this moment: ``workers(EVER)`` lists the dead ones too."""
LIVE = (ScheduleState.ACTIVE, ScheduleState.PAUSED)
"""A failing schedule that has ended (cancelled, disabled) runs no more ticks: not a problem."""
UNREADABLE_LISTED = 1000
"""The most unreadable rows one check lists."""
PROBLEMS, UNCHECKED = 1, 2
"""Exit codes: problems found; the check could not be made."""


class Unchecked(click.ClickException):
    """The check could not be made: exit code 2."""

    exit_code = UNCHECKED


@dataclass
class Report:
    database: str
    server: str | None = None
    reached: str | None = None
    """``host:port`` the check's connection reached: of several hosts, or behind a proxy, which."""
    read_only: str | None = None
    """Why the server takes no writes, or ``None`` when it does (or was not reached)."""
    driver: str | None = None
    driver_version: str | None = None
    skip_locked: str | None = None
    schema: str | None = None
    schema_state: str | None = None
    head: str = field(default_factory=head_revision)
    workers: list[WorkerInfo] = field(default_factory=list)
    dead: list[WorkerInfo] = field(default_factory=list)
    """Workers that missed two heartbeats, whose rows the prune has not deleted yet."""
    stranded: list[Stranded] = field(default_factory=list)
    stuck: list[RunningJob] = field(default_factory=list)
    """Running jobs announced stuck in their current attempt (``core.stuck``)."""
    conflicts: list[DefinitionConflict] = field(default_factory=list)
    """Tasks that two live workers of the namespace define differently."""
    namespace: str = DEFAULT_NAMESPACE
    failing: list[Schedule] = field(default_factory=list)
    """Live schedules whose last ``alert_after_failures`` ticks failed (set by the workers)."""
    unreadable: list[UnreadableRow] = field(default_factory=list)
    """Rows this rota cannot read (a newer rota's, a hand edit's), which it leaves alone."""
    problems: list[str] = field(default_factory=list)
    complete: bool = False
    """Whether every check was made: one that stops early leaves the rest unknown."""
    unreached: str = "unreachable"
    """What the server line says when no server was described."""
    checked_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@click.command()
@database_options
@json_option
def check(url: str | None, table_prefix: str, as_json: bool) -> None:
    """Check the database: server reached, writable, driver, SKIP LOCKED, schema, live workers,
    stranded and stuck jobs.

    A job is stranded when it is pending and no live worker (one that missed fewer than two
    heartbeats) registers its task for its queue; stuck when it runs, its lease renewed, past
    its task's stuck_after or its timeout plus a margin. Everything but the server is of one
    namespace (--namespace). Exits 1 when jobs are stranded or stuck, two live workers define a
    task differently, the server is read-only (a replica: no worker can work there), a schedule
    is failing (its last alert_after_failures ticks failed), or a row cannot be read (a job,
    worker or schedule written by a newer rota or by hand, which rota leaves alone), naming
    each; dead workers are listed but are no problem of their own. Exits 2 when it cannot
    check: the database is unreachable or refuses the connection (a wrong password), or its
    schema is missing or behind this version of rota.
    """
    target = url or default_url()
    rota = build_rota(target, table_prefix)  # first: it turns a malformed URL into a usage error
    report = Report(database=describe_url(target), namespace=rota.namespace)
    try:
        examine(rota, report)
    except RotaError as error:
        report.problems.append(f"{error.code}: {scrub(str(error), target)}")
        report.unreached = unreached(error, target)
    finally:
        rota.close()
    code = 0 if not report.problems else PROBLEMS if report.complete else UNCHECKED
    if as_json:
        emit_json(as_dict(report))
        click.get_current_context().exit(code)
    show(report)
    if code:
        problems = "\n".join(report.problems)
        raise fail(problems) if code == PROBLEMS else Unchecked(problems)


def examine(rota: Rota, report: Report) -> None:
    view = rota.inspect
    report.driver, report.driver_version = view.driver()
    with reaching(rota):
        server = view.server()
    report.server, report.skip_locked = str(server), server.skip_locked
    report.reached, report.read_only = server.reached, server.read_only
    if server.problem is not None:
        report.problems.append(f"{ConfigError.code}: {server.problem}")
    if server.read_only is not None:
        report.problems.append(
            f"{ErrorCode.SERVER_READ_ONLY}: the server at {server.reached} takes no writes "
            f"({server.read_only}), so no worker can claim or finish a job there: point the "
            "URL at the primary, or at a proxy or name that follows it"
        )
    status = view.schema()
    report.schema, report.schema_state = status.revision, status.state
    if status.problem is not None:
        report.problems.append(status.problem)
        return
    reading = view.server_clock()  # the time line of leases, as the workers read it
    report.checked_at = reading.remote if reading is not None else report.checked_at
    every = view.workers(EVER)
    report.workers = [worker for worker in every if worker.is_live(report.checked_at)]
    report.dead = [worker for worker in every if not worker.is_live(report.checked_at)]
    report.stranded = view.stranded(report.checked_at)
    report.conflicts = conflicts(report.workers)
    report.problems += [
        visible(f"{ErrorCode.DEFINITION_CONFLICT}: {conflict.message()}")
        for conflict in report.conflicts
    ]
    report.problems += [
        visible(
            f"{ErrorCode.JOBS_STRANDED}: {row.pending} pending job(s) of task {row.task!r} in "
            f"queue {row.queue!r} wait for a worker: {row.reason}"
        )
        for row in report.stranded
    ]
    report.stuck = view.stuck()
    report.problems += [
        visible(
            f"{ErrorCode.JOBS_STUCK}: job {job.id} of task {job.task!r} is stuck: attempt "
            f"{job.attempt} has run for {span(report.checked_at - job.started_at)} on worker "
            f"{job.lease_owner}, which still renews its lease"
        )
        for job in report.stuck
    ]
    report.failing = [schedule for schedule in view.schedules(LIVE) if schedule.failing]
    report.problems += [
        f"{ErrorCode.SCHEDULE_FAILING}: schedule {schedule.name!r} is failing: the jobs of its "
        f"last {schedule.failures} tick(s) failed"
        for schedule in report.failing
    ]
    report.unreadable = view.unreadable(UNREADABLE_LISTED + 1)
    report.problems += [
        visible(
            f"{ErrorCode.UNREADABLE_ROW}: {row.kind} {row.key} cannot be read, so rota leaves "
            f"it alone: {row.problem}"
        )
        for row in report.unreadable[:UNREADABLE_LISTED]
    ]
    if len(report.unreadable) > UNREADABLE_LISTED:
        report.problems.append(
            f"{ErrorCode.UNREADABLE_ROW}: more than {UNREADABLE_LISTED} rows cannot be read; the "
            f"first {UNREADABLE_LISTED} are listed"
        )
    report.complete = True


def unreached(error: RotaError, url: str) -> str:
    """The server line of a check that described no server: why, in a few words."""
    if isinstance(error, DatabaseUnavailable):
        return "unreachable"
    if isinstance(error, StoreError):
        return "cannot be opened" if database_file(url) is not None else "refused the connection"
    return "not reached"


def as_dict(report: Report) -> dict[str, Any]:
    return {
        "ok": not report.problems,
        "problems": report.problems,
        "database": report.database,
        "namespace": report.namespace,
        "server": report.server,
        "reached": report.reached,
        "writable": None if report.server is None else report.read_only is None,
        "read_only": report.read_only,
        "driver": {"name": report.driver, "version": report.driver_version},
        "skip_locked": report.skip_locked,
        "schema": {
            "revision": report.schema,
            "head": report.head,
            "state": report.schema_state,
        },
        "workers": [worker_dict(report, worker) for worker in report.workers],
        "dead_workers": [worker_dict(report, worker) for worker in report.dead],
        "stranded_jobs": [asdict(row) for row in report.stranded],
        "stuck_jobs": [
            {**asdict(job), "running_seconds": job.running_for(report.checked_at)}
            for job in report.stuck
        ],
        "definition_conflicts": [asdict(conflict) for conflict in report.conflicts],
        "failing_schedules": [
            {
                "name": schedule.name,
                "task": schedule.spec.task,
                "failures": schedule.failures,
                "next_run_at": schedule.next_run_at,
            }
            for schedule in report.failing
        ],
        "unreadable_rows": [asdict(row) for row in report.unreadable[:UNREADABLE_LISTED]],
        "checked_at": report.checked_at,
    }


def worker_dict(report: Report, worker: WorkerInfo) -> dict[str, Any]:
    return {
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "queues": list(worker.queues),
        "tasks": list(worker.tasks),
        "concurrency": worker.concurrency,
        "started_at": worker.started_at,
        "heartbeat_at": worker.heartbeat_at,
        "heartbeat_age_seconds": (report.checked_at - worker.heartbeat_at).total_seconds(),
        "heartbeat_seconds": worker.heartbeat_seconds,
        "live_until": worker.live_until,
    }


def show(report: Report) -> None:
    facts = [("database", report.database), ("namespace", report.namespace)]
    if report.driver is not None:
        facts.append(("driver", f"{report.driver} {report.driver_version}"))
    if report.server is None:
        facts.append(("server", report.unreached))
        render(pairs(facts))
        return
    schema = {
        "up to date": f"{report.schema} (up to date)",
        "behind": f"{report.schema} (behind: this rota needs {report.head})",
        "newer": f"{report.schema} (newer than this rota's {report.head})",
    }.get(report.schema_state or "", f"missing (this rota needs {report.head})")
    facts += [
        ("server", report.server),
        *([("reached", report.reached)] if report.reached is not None else []),
        ("writable", "yes" if report.read_only is None else f"no: {report.read_only}"),
        ("skip locked", report.skip_locked or "-"),
        ("schema", schema),
    ]
    if report.schema_state in ("up to date", "newer"):
        facts.append(("live workers", str(len(report.workers))))
        facts.append(("dead workers", str(len(report.dead))))
        facts.append(("stranded jobs", str(sum(row.pending for row in report.stranded))))
        facts.append(("stuck jobs", str(len(report.stuck))))
        facts.append(("definition conflicts", str(len(report.conflicts))))
        facts.append(("failing schedules", str(len(report.failing))))
        facts.append(("unreadable rows", str(len(report.unreadable[:UNREADABLE_LISTED]))))
    items: list[RenderableType] = [pairs(facts)]
    for title, listed in (("Live workers:", report.workers), ("Dead workers:", report.dead)):
        if listed:
            items += ["", title, workers_grid(report, listed)]
    if report.stranded:
        jobs = Grid(
            Column("task", NAME),
            Column("queue", NAME, drop=1),
            Column("pending"),
            Column("why", WORDS, drop=2),
        )
        for row in report.stranded:
            jobs.add_row(row.task, row.queue, str(row.pending), row.reason)
        items += ["", "Pending jobs no live worker can run:", jobs]
    if report.stuck:
        stuck = Grid(
            Column("job"),
            Column("task", NAME),
            Column("running for"),
            Column("worker", NAME, drop=1),
        )
        for job in report.stuck:
            running = span(report.checked_at - job.started_at)
            stuck.add_row(str(job.id), job.task, running, job.lease_owner or NONE)
        items += ["", "Stuck jobs (running, their lease renewed, past their limit):", stuck]
    if report.conflicts:
        differing = Grid(
            Column("task", NAME),
            Column("workers", NAME, drop=1),
            Column("differences", WORDS),
        )
        for conflict in report.conflicts:
            workers = f"{conflict.worker} / {conflict.other}"
            differing.add_row(conflict.task, workers, "; ".join(conflict.differences))
        items += ["", "Tasks live workers define differently:", differing]
    if report.failing:
        failing = Grid(Column("schedule", NAME), Column("task", NAME, drop=1), Column("failed"))
        for schedule in report.failing:
            failing.add_row(schedule.name, schedule.spec.task, f"{schedule.failures} in a row")
        items += ["", "Failing schedules:", failing]
    if report.unreadable:
        grid = Grid(Column("row", NAME), Column("key", NAME), Column("problem", WORDS, drop=1))
        for bad in report.unreadable[:UNREADABLE_LISTED]:
            grid.add_row(bad.kind, bad.key, bad.problem)
        items += ["", "Rows rota cannot read (left alone):", grid]
    render(*items)


def workers_grid(report: Report, workers: list[WorkerInfo]) -> Grid:
    grid = Grid(
        Column("host", NAME),
        Column("pid"),
        Column("queues", NAME, drop=2),
        Column("tasks", drop=3),
        Column("up", drop=4),
        Column("last heartbeat", drop=1),
    )
    for worker in workers:
        grid.add_row(
            worker.host,
            str(worker.pid),
            list(worker.queues) or NONE,
            str(len(worker.tasks)),
            span(report.checked_at - worker.started_at),
            f"{span(report.checked_at - worker.heartbeat_at)} ago",
        )
    return grid
