"""``rota check``, ``jobs``, ``job`` and ``schedules`` on every backend, as a user runs them."""

from __future__ import annotations

import importlib.metadata
import json
import re
import socket
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from sqlalchemy import inspect, text

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import DrainResult, WorkerInfo
from rota.store import migrate
from rota.testing import FakeClock
from tests.cli.conftest import Cli, parsed, parsed_failure
from tests.conftest import START, Database

PASSWORD = "Sup3r-s3cret-pw"
MINUTE = timedelta(minutes=1)


def columns(line: str) -> list[str]:
    """The cells of one line of a table: columns are two or more spaces apart."""
    return re.split(r"\s{2,}", line.strip())


def test_jobs_newest_first_with_filters_and_json(
    db: Database, rota: Rota, clock: FakeClock, cli: Cli
) -> None:
    @rota.task
    def ok(ctx: JobContext, n: int) -> None: ...

    @rota.task(retries=0, queue="mail")
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("no")

    done = rota.queue(ok, 1)
    failed = rota.queue(boom)
    waiting = rota.queue(ok, 2, delay=3600)
    assert rota.drain() == DrainResult(succeeded=1, failed=1)

    result = cli("jobs")
    assert result.exit_code == 0, result.output
    header, _rule, *rows = result.stdout.splitlines()
    assert columns(header) == [
        "id",
        "task",
        "progress",
        "queue",
        "state",
        "attempt",
        "run at",
        "started at",
        "finished at",
        "last error",
        "message",
    ]
    assert [columns(row)[0] for row in rows] == [str(waiting), str(failed), str(done)]
    finished = rota.job(failed).finished_at
    assert finished is not None
    assert columns(rows[1]) == [  # no progress: it is not running
        str(failed),
        "boom",
        "mail",
        "failed",
        "1/1",
        "2026-03-02 09:00:00Z",
        "2026-03-02 09:00:00Z",
        finished.strftime("%Y-%m-%d %H:%M:%SZ"),
        "EXECUTION_FAILED",
        "no",
    ]
    assert columns(rows[0])[3:5] == ["pending", "0/4"]
    assert columns(rows[0])[-3:] == ["-", "-", "-"]

    def ids(*filters: str) -> list[int]:
        return [job["id"] for job in parsed(cli("jobs", *filters, "--json"))]

    assert ids("--state", "failed") == [failed]
    assert ids("--state", "pending", "--state", "succeeded") == [waiting, done]
    assert ids("--task", "ok", "--limit", "1") == [waiting]
    (mail,) = parsed(cli("jobs", "--queue", "mail", "--json"))
    assert mail["last_error"] == {
        "code": "EXECUTION_FAILED",
        "type": "builtins.RuntimeError",
        "message": "no",
    }
    assert datetime.fromisoformat(mail["finished_at"]) == finished
    assert datetime.fromisoformat(mail["run_at"]) == START

    from_environment = CliRunner(env={"ROTA_DATABASE_URL": db.url}).invoke(
        main, ["jobs", "--table-prefix", db.prefix, "--state", "failed", "--json"]
    )
    assert [job["id"] for job in parsed(from_environment)] == [failed]
    assert cli("jobs", "--task", "nothing-like-it").stdout == "no jobs\n"


def test_job_in_full_with_every_attempts_error(rota: Rota, clock: FakeClock, cli: Cli) -> None:
    @rota.task(retries=1, retry_delay=1)
    def charge(ctx: JobContext, order: int, note: str = "") -> None:
        raise ValueError(f"bad order {order}")

    job_id = rota.queue(charge, 42, note="ünïcode [b]")
    assert rota.drain().retried == 1
    clock.advance(60)
    assert rota.drain().failed == 1

    result = cli("job", str(job_id))
    assert result.exit_code == 0, result.output
    out = result.stdout
    facts = dict(columns(line) for line in out.split("\n\n")[0].splitlines())
    assert facts["state"] == "failed" and facts["attempt"] == "2/2"
    assert facts["task"] == "charge" and facts["created at"] == "2026-03-02 09:00:00Z"
    assert "args:   [42]" in out and 'kwargs: {"note": "ünïcode [b]"}' in out
    assert "errors (2)" in out
    assert (
        "attempt 1 at 2026-03-02 09:00:00Z: EXECUTION_FAILED builtins.ValueError: bad order 42"
        in out
    )
    assert out.count("Traceback (most recent call last)") == 2
    assert 'raise ValueError(f"bad order {order}")' in out

    data = parsed(cli("job", str(job_id), "--json"))
    assert (data["args"], data["kwargs"]) == ([42], {"note": "ünïcode [b]"})
    assert [error["attempt"] for error in data["errors"]] == [1, 2]
    assert "Traceback" in data["errors"][1]["traceback"]
    assert datetime.fromisoformat(data["errors"][1]["at"]) == START + timedelta(seconds=60)

    missing = cli("job", "999999")
    assert missing.exit_code == 1
    assert "JOB_NOT_FOUND: job 999999 does not exist" in missing.stderr


def test_schedules_with_their_next_runs(rota: Rota, clock: FakeClock, cli: Cli) -> None:
    @rota.task(cron="30 3 * * *", tz="Asia/Shanghai")
    def nightly(ctx: JobContext) -> None: ...

    @rota.task
    def report(ctx: JobContext) -> None: ...

    rota.drain()
    clock.advance(timedelta(hours=10, minutes=30))  # 03:30 in Shanghai
    assert rota.drain().succeeded == 1
    rota.schedule("*/15 * * * *", report, name="quarter-hourly")
    rota.pause("quarter-hourly")

    result = cli("schedules")
    assert result.exit_code == 0, result.output
    header, _rule, *rows = result.stdout.splitlines()
    assert columns(header) == [
        "name",
        "task",
        "cron",
        "tz",
        "next run",
        "last run",
        "runs",
        "failed",
        "state",
        "overlap",
    ]
    first, second = (columns(row) for row in rows)
    assert first[:3] == ["nightly", "30 3 * * *", "Asia/Shanghai"], "its task is its name"
    assert first[3].endswith("03:30+08:00")
    # runs and failures are those of the last 24 hours by the command's own (real) clock: the
    # tick ran months earlier on the test's clock, and only its last run is shown
    assert first[4:] == ["2026-03-02 19:30:00Z", "0", "0", "active", "skip"]
    assert second == [
        "quarter-hourly",
        "report",
        "*/15 * * * *",
        "UTC",
        "-",
        "-",
        "0",
        "0",
        "paused",
        "skip",
    ]

    data = {schedule["name"]: schedule for schedule in parsed(cli("schedules", "--json"))}
    ticks = [datetime.fromisoformat(tick) for tick in data["nightly"]["next_runs"]]
    assert len(ticks) == 3 and ticks[0] > datetime.now(timezone.utc) - timedelta(minutes=1)
    assert {tick.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%H:%M") for tick in ticks} == {
        "03:30"
    }
    assert [b - a for a, b in pairwise(ticks)] == [timedelta(days=1)] * 2
    assert datetime.fromisoformat(data["nightly"]["last_run"]) == clock.now()
    assert (data["nightly"]["runs"], data["nightly"]["source"]) == (0, "code")  # as above
    assert data["quarter-hourly"]["state"] == "paused"
    assert data["quarter-hourly"]["next_runs"] == []

    (tick_job,) = rota.store.reads.jobs(task="nightly")
    shown = cli("job", str(tick_job.id)).stdout
    facts = dict(columns(line) for line in shown.split("\n\n")[0].splitlines())
    assert (facts["schedule"], facts["tick"]) == ("nightly", "2026-03-02 19:30:00Z")


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_a_failing_schedule_is_marked_and_fails_the_check(rota: Rota, cli: Cli) -> None:
    @rota.task(cron="*/5 * * * *")
    def report(ctx: JobContext) -> None: ...

    rota.drain()
    assert cli("check").exit_code == 0
    assert rota.store.schedules.record_tick("report", failed=True, threshold=1) == "failing"

    listed = cli("schedules")
    (row,) = listed.stdout.splitlines()[2:]
    assert columns(row)[-2:] == ["active (failing)", "skip"]
    (data,) = parsed(cli("schedules", "--json"))
    assert data["failing"] is True and data["code_cron"] is None

    checked = cli("check")
    assert checked.exit_code == 1
    assert "SCHEDULE_FAILING: schedule 'report' is failing" in checked.stderr
    facts = dict(columns(line) for line in checked.stdout.split("\n\n")[0].splitlines())
    assert facts["failing schedules"] == "1"
    failing = checked.stdout.split("Failing schedules:")[1].splitlines()
    assert [columns(line) for line in failing[3:]] == [["report", "report", "1 in a row"]]
    data = parsed_failure(cli("check", "--json"))
    assert data["ok"] is False
    assert [(s["name"], s["failures"]) for s in data["failing_schedules"]] == [("report", 1)]
    assert any("schedule 'report' is failing" in problem for problem in data["problems"])

    rota.store.schedules.record_tick("report", failed=False, threshold=1)
    assert cli("check").exit_code == 0, "recovered"


def test_check_reports_server_schema_workers_and_stranded_jobs(
    db: Database, rota: Rota, cli: Cli
) -> None:
    @rota.task
    def known(ctx: JobContext) -> None: ...

    rota.queue(known)
    rota.queue(known, queue="mail")
    rota.queue("ghost")
    rota.queue("ghost")
    now = datetime.now(timezone.utc)
    for host, heartbeat in (("box-1", now - timedelta(seconds=5)), ("gone", now - 3 * MINUTE)):
        rota.store.cluster.register_worker(
            WorkerInfo(
                id=host,
                host=host,
                pid=4321,
                queues=("default",),
                tasks=("known",),
                concurrency=5,
                started_at=now - timedelta(hours=2),
                heartbeat_at=heartbeat,
                task_queues={"known": "default"},
            )
        )
    head = migrate.head_revision()

    result = cli("check")
    assert result.exit_code == 1, result.output
    assert "JOBS_STRANDED: 2 pending job(s) of task 'ghost'" in result.stderr
    out = result.stdout
    product, driver = {
        "sqlite": ("SQLite", "pysqlite"),
        "mariadb": ("MariaDB", "pymysql"),
        "postgres": ("PostgreSQL", "psycopg"),
    }[db.backend]
    facts = dict(columns(line) for line in out.split("\n\n")[0].splitlines())
    assert facts["server"].startswith(product + " ")
    assert facts["driver"].startswith(driver + " ")
    if db.backend != "sqlite":
        distribution = "PyMySQL" if db.backend == "mariadb" else "psycopg"
        assert facts["driver"] == f"{driver} {importlib.metadata.version(distribution)}"
    assert facts["skip locked"] == ("single writer" if db.backend == "sqlite" else "yes")
    assert facts["schema"] == f"{head} (up to date)"
    assert (facts["live workers"], facts["dead workers"], facts["stranded jobs"]) == ("1", "1", "3")
    live, dead = out.split("Live workers:")[1].split("Dead workers:")
    assert "box-1" in live and "gone" not in live
    assert "gone" in dead.split("Pending jobs")[0], "listed as dead until its row is pruned"
    stranded = out.split("Pending jobs no live worker can run:")[1].splitlines()
    assert [columns(line) for line in stranded[3:]] == [
        ["ghost", "default", "2", "no live worker registers the task"],
        ["known", "mail", "1", "no live worker with the task serves the queue"],
    ]

    data = parsed_failure(cli("check", "--json"))
    assert data["ok"] is False and len(data["problems"]) == 2
    assert data["schema"] == {"revision": head, "head": head, "state": "up to date"}
    (worker,) = data["workers"]
    assert [dead["host"] for dead in data["dead_workers"]] == ["gone"]
    assert (worker["host"], worker["pid"], worker["queues"]) == ("box-1", 4321, ["default"])
    assert 0 <= worker["heartbeat_age_seconds"] < 60
    assert datetime.fromisoformat(worker["started_at"]) < now
    assert [(row["task"], row["queue"], row["pending"]) for row in data["stranded_jobs"]] == [
        ("ghost", "default", 2),
        ("known", "mail", 1),
    ]


def test_a_missing_or_old_schema_fails_the_check(db: Database, cli: Cli) -> None:
    head = migrate.head_revision()
    engine = db.engine()
    with engine.connect():  # an empty database (SQLite: an empty file)
        pass
    missing = cli("check")
    assert missing.exit_code == 2, "cannot check"
    assert f"missing (this rota needs {head})" in missing.stdout
    assert "run `rota migrate`" in missing.stderr
    refused = cli("jobs")
    assert refused.exit_code == 1 and "run `rota migrate`" in refused.stderr
    assert not [name for name in inspect(engine).get_table_names() if name.startswith(db.prefix)]

    assert cli("migrate").exit_code == 0
    version = db.table("alembic_version")
    with engine.begin() as connection:
        connection.execute(text(f"UPDATE {version} SET version_num = '0001'"))
    behind = cli("check")
    assert behind.exit_code == 2
    assert f"0001 (behind: this rota needs {head})" in behind.stdout
    as_json = cli("check", "--json")
    assert as_json.exit_code == 2
    data = json.loads(as_json.stdout)
    assert data["schema"]["state"] == "behind" and data["ok"] is False

    with engine.begin() as connection:
        connection.execute(text(f"UPDATE {version} SET version_num = :head"), {"head": head})
    engine.dispose()
    assert cli("check").exit_code == 0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("scheme", ["mysql", "postgresql"])
def test_an_unreachable_database_fails_without_showing_the_password(scheme: str) -> None:
    url = f"{scheme}://app:{PASSWORD}@127.0.0.1:{closed_port()}/orders"
    runner = CliRunner()
    result = runner.invoke(main, ["check", "--url", url])
    assert result.exit_code == 2, "cannot check"
    assert "DATABASE_UNAVAILABLE: cannot reach the" in result.stderr
    assert "'orders' on 127.0.0.1" in result.stderr
    assert re.search(r"^server +unreachable$", result.stdout, re.MULTILINE)
    as_json = runner.invoke(main, ["check", "--url", url, "--json"])
    assert as_json.exit_code == 2
    assert "DATABASE_UNAVAILABLE" in json.loads(as_json.stdout)["problems"][0]
    listing = runner.invoke(main, ["jobs", "--url", url])
    assert listing.exit_code == 1 and "DATABASE_UNAVAILABLE" in listing.stderr
    for output in (result.output, as_json.output, listing.output):
        assert PASSWORD not in output


def test_sql_in_filters_and_names_is_only_data(db: Database, rota: Rota, cli: Cli) -> None:
    @rota.task
    def ok(ctx: JobContext) -> None: ...

    job_id = rota.queue(ok)
    for evil in (f"x'; DROP TABLE {db.prefix}jobs; --", f'x"; DROP TABLE {db.prefix}jobs; --'):
        assert parsed(cli("jobs", "--task", evil, "--json")) == []
        assert parsed(cli("jobs", "--queue", evil, "--json")) == []
        for command in ("pause", "resume", "run-now", "cancel"):
            refused = cli(command, evil)
            assert refused.exit_code == 1 and "SCHEDULE_NOT_FOUND" in refused.stderr
    engine = db.engine()
    tables = set(inspect(engine).get_table_names())
    engine.dispose()
    assert {db.table("jobs"), db.table("schedules"), db.table("workers")} <= tables
    assert [job.id for job in rota.store.reads.jobs()] == [job_id]


def test_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    result = CliRunner().invoke(main, ["jobs", "--url", f"sqlite:///{path}"])
    assert result.exit_code == 1
    assert f"DATABASE_UNAVAILABLE: no SQLite database file at '{path}'" in result.stderr
    assert not path.exists()
