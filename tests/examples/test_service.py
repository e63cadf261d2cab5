"""The example service (``examples/service``): its settings, its tasks registered by importing
``service.tasks`` alone, the ``rota`` command loading it, a failing schedule's alert posted to
the webhook once, and two replicas started as its systemd unit starts them (the unit's command,
its environment file) on MariaDB: both register as workers, each tick of a schedule runs once,
a manual run once, and SIGTERM stops both with 0.

The report's cron comes from ``$SERVICE_REPORT_CRON``, so the replicas' test sets it to every
minute and waits for the next minute's tick: at most a minute of real time.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from rota import Fail, JobContext, JobState, Rota
from rota.config import DEFAULT_GRACE, RotaConfig
from rota.environment import OTHER_VARIABLES, variable
from service.settings import Settings
from tests.conftest import Database
from tests.helpers import sql_store, wait_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "service"
UNIT = EXAMPLE / "deploy" / "rota-service@.service"
ENVIRONMENT_FILE = EXAMPLE / "deploy" / "service.env"
ROTA = [sys.executable, "-m", "rota"]
ACCOUNTS = [{"id": 1, "plan": "pro"}, {"id": 2, "plan": "free"}, {"id": 3, "plan": "pro"}]
SCHEDULES = {
    "sync_accounts": ("*/15 * * * *", "UTC"),
    "daily_report": ("0 6 * * *", "UTC"),
    "purge_old_files": ("30 3 * * *", "UTC"),
}
"""The schedules README.md documents, with the default settings."""


def unit_setting(name: str) -> str:
    """The value of ``name=`` in the systemd unit."""
    for line in UNIT.read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.partition("=")[2]
    raise AssertionError(f"{UNIT} has no {name}=")


def environment_file() -> dict[str, str]:
    """``deploy/service.env`` read as systemd reads an ``EnvironmentFile``."""
    found = {}
    for line in ENVIRONMENT_FILE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip().removeprefix('"').removesuffix('"')
    return found


def service_environment(db: Database, tmp_path: Path, **changes: str) -> dict[str, str]:
    """The unit's environment file, pointed at the test's database, data directory and
    accounts (a ``file://`` URL); the process's own ``ROTA_*``/``SERVICE_*`` left out."""
    accounts = tmp_path / "accounts.json"
    accounts.write_text(json.dumps(ACCOUNTS))
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ROTA_", "SERVICE_"))
    }
    return {
        **inherited,
        **environment_file(),
        "ROTA_DATABASE_URL": db.url,
        "ROTA_TABLE_PREFIX": db.prefix,
        "SERVICE_DATA_DIR": str(tmp_path / "data"),
        "SERVICE_ACCOUNTS_URL": accounts.as_uri(),
        "SERVICE_ALERT_WEBHOOK": "",
        **changes,
    }


def rota_command(env: Mapping[str, str], db: Database, *arguments: str, ok: bool = True) -> str:
    """The ``rota`` command as an operator runs it with the service's environment; its output,
    and unless ``ok`` is false, an ``AssertionError`` when it exits non-zero."""
    command = [*ROTA, *arguments, "--table-prefix", db.prefix]
    done = subprocess.run(
        command, cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 or not ok, done.stdout + done.stderr
    return done.stdout


@contextmanager
def replicas(
    command: list[str], env: Mapping[str, str], logs: Path, count: int
) -> Iterator[list[subprocess.Popen[str]]]:
    """``count`` processes of ``command`` in the example's directory, their output in
    ``logs/<n>.log`` (journald's part); killed if still running at the end."""
    started = []
    try:
        for number in range(1, count + 1):
            with (logs / f"{number}.log").open("w") as log:
                started.append(
                    subprocess.Popen(
                        command,
                        cwd=EXAMPLE,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                )
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait()


def stop(processes: list[subprocess.Popen[str]]) -> list[int]:
    """``systemctl stop``: SIGTERM to each, then their exit codes."""
    for process in processes:
        process.send_signal(signal.SIGTERM)
    return [process.wait(timeout=float(unit_setting("TimeoutStopSec"))) for process in processes]


def control(db: Database) -> Rota:
    """The test's view of the service's database, in the service's namespace."""
    namespace = environment_file()["ROTA_NAMESPACE"]
    return Rota(
        db.url,
        table_prefix=db.prefix,
        namespace=namespace,
        auto_migrate=False,
        connect_timeout=10,
    )


def test_the_settings_come_from_the_environment() -> None:
    settings = Settings.from_environ({"SERVICE_ACCOUNTS_URL": "https://crm/accounts"})
    assert settings.data_dir == Path("var")
    assert settings.snapshots == Path("var/snapshots")
    assert (settings.report_cron, settings.report_tz, settings.keep_days) == (
        "0 6 * * *",
        "UTC",
        14,
    )
    assert settings.alert_webhook is None
    with pytest.raises(RuntimeError, match="SERVICE_ACCOUNTS_URL"):
        Settings.from_environ({})
    with pytest.raises(RuntimeError, match="SERVICE_KEEP_DAYS"):
        Settings.from_environ({"SERVICE_ACCOUNTS_URL": "x", "SERVICE_KEEP_DAYS": "two"})
    unit = environment_file()
    assert Settings.from_environ(unit).report_cron == "0 6 * * 1-5"
    assert not [name for name in unit if not name.startswith(("ROTA_", "SERVICE_"))]
    known = {variable(setting.name) for setting in fields(RotaConfig)} | OTHER_VARIABLES
    assert {name for name in unit if name.startswith("ROTA_")} <= known


def test_the_unit_stops_a_replica_after_its_grace() -> None:
    assert unit_setting("KillSignal") == "SIGTERM"
    assert float(unit_setting("TimeoutStopSec")) > DEFAULT_GRACE
    assert unit_setting("Restart") == "always"
    assert unit_setting("EnvironmentFile") == "/etc/rota-service/service.env"


@pytest.fixture
def service_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The service imported in this process with the settings of the test (its data directory,
    the ``ACCOUNTS`` file), and forgotten afterwards; the data directory."""
    accounts = tmp_path / "accounts.json"
    accounts.write_text(json.dumps(ACCOUNTS))
    monkeypatch.setenv("ROTA_DATABASE_URL", f"sqlite:///{tmp_path}/rota.db")
    monkeypatch.setenv("SERVICE_ACCOUNTS_URL", accounts.as_uri())
    monkeypatch.setenv("SERVICE_DATA_DIR", str(tmp_path / "data"))
    for name in [name for name in sys.modules if name.partition(".")[0] == "service"]:
        monkeypatch.delitem(sys.modules, name)
    yield tmp_path / "data"
    for name in [name for name in sys.modules if name.partition(".")[0] == "service"]:
        del sys.modules[name]


def context(task: str, tick: datetime | None) -> JobContext:
    """A context made by hand, as the worker makes one for the job of ``tick``."""
    logger = logging.LoggerAdapter(logging.getLogger(f"test.{task}"), {})
    return JobContext(
        job_id=1, task=task, queue="default", attempt=1, scheduled_at=tick, logger=logger
    )


def test_each_handler_does_its_tick_once(service_modules: Path) -> None:
    """Run again for the same tick (at least once), a handler finds its work done."""
    from service.tasks.cleanup import purge_old_files
    from service.tasks.reports import daily_report
    from service.tasks.sync import sync_accounts

    tick = datetime(2026, 3, 2, 6, 0, tzinfo=timezone.utc)
    assert sync_accounts(context("sync_accounts", tick)) == {
        "snapshot": "accounts-20260302T060000Z.json",
        "accounts": 3,
    }
    assert sync_accounts(context("sync_accounts", tick))["skipped"] is True
    report = daily_report(context("daily_report", tick + timedelta(minutes=1)))
    assert report == {"report": "report-20260302T060100Z.json", "accounts": 3}
    assert daily_report(context("daily_report", tick + timedelta(minutes=1)))["skipped"] is True
    with pytest.raises(Fail, match="no accounts snapshot yet"):
        daily_report(context("daily_report", tick - timedelta(minutes=1)))
    with pytest.raises(Fail, match="runs on a schedule's tick"):
        daily_report(context("daily_report", None))

    cleanup = tick + timedelta(days=14, minutes=1)  # the report is 14 days old, not older
    assert purge_old_files(context("purge_old_files", cleanup)) == {"removed": 1}
    assert purge_old_files(context("purge_old_files", cleanup)) == {"removed": 0}
    assert [path.name for path in service_modules.rglob("*.json")] == [report["report"]]


SHOW_TASKS = """
import json, sys
import service.tasks
from service.rota_app import rota
tasks = {
    name: [task.cron, task.tz, task.queue]
    for name in rota.registry.names()
    for task in [rota.registry.find(name)]
}
print(json.dumps({"tasks": tasks, "entry point imported": "service.app" in sys.modules}))
"""


@pytest.mark.sqlite_only
def test_importing_the_tasks_alone_registers_every_task(db: Database, tmp_path: Path) -> None:
    env = service_environment(db, tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", SHOW_TASKS],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    shown = json.loads(done.stdout)
    assert shown["entry point imported"] is False
    assert shown["tasks"] == {
        "sync_accounts": ["*/15 * * * *", "UTC", "default"],
        "daily_report": ["0 6 * * 1-5", "Europe/Berlin", "default"],  # the unit's environment
        "purge_old_files": ["30 3 * * *", "UTC", "default"],
        "post_alert": [None, "UTC", "alerts"],
    }


FAIL_TWICE = """
import time
from service.app import rota
rota.drain()  # the schedules, as a worker's start writes them
for _ in range(2):
    rota.run_now("daily_report")  # no snapshot yet: the report fails
    rota.drain()
deadline = time.monotonic() + 30
while not rota.inspect.jobs(task="post_alert") and time.monotonic() < deadline:
    time.sleep(0.05)  # the hook runs in the background, after the failure is written
rota.drain()
for job in rota.inspect.jobs(task="post_alert"):
    print(job.id, job.state, job.errors)
"""


class Webhook(BaseHTTPRequestHandler):
    received: ClassVar[list[object]] = []

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.sqlite_only
def test_a_failing_schedule_posts_one_alert_to_the_webhook(db: Database, tmp_path: Path) -> None:
    Webhook.received.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Webhook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        env = service_environment(db, tmp_path, SERVICE_ALERT_WEBHOOK=url)
        env.pop("ROTA_AUTO_MIGRATE")
        done = subprocess.run(
            [sys.executable, "-c", FAIL_TWICE],
            cwd=EXAMPLE,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert env["ROTA_ALERT_AFTER_FAILURES"] == "2"
    assert Webhook.received == [
        {
            "text": "schedule daily_report is failing: FAILED_BY_HANDLER: no accounts snapshot "
            "yet: run `rota run-now sync_accounts`"
        }
    ], done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_the_rota_command_loads_the_service(db: Database, tmp_path: Path) -> None:
    env = service_environment(db, tmp_path, SERVICE_REPORT_CRON="", SERVICE_REPORT_TZ="")
    env.pop("ROTA_AUTO_MIGRATE")  # one process on SQLite: it migrates as it starts
    command = [*ROTA, "worker", "service.app:rota"]
    with replicas(command, env, tmp_path, 1) as started:
        wait_until(
            lambda: json.loads(rota_command(env, db, "check", "--json", ok=False))["workers"],
            timeout=30,
        )
        schedules = json.loads(rota_command(env, db, "schedules", "--json"))
        assert {s["name"]: (s["cron"], s["tz"]) for s in schedules} == SCHEDULES
        (worker,) = json.loads(rota_command(env, db, "check", "--json"))["workers"]
        assert sorted(worker["tasks"]) == sorted([*SCHEDULES, "post_alert"])
        assert stop(started) == [0]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_replicas_run_each_tick_once(mariadb: Database, tmp_path: Path) -> None:
    """The deploy of README.md: ``rota migrate`` once, then both replicas as the unit starts
    them; an operator's ``rota run-now`` (the first snapshot) and the next minute's report each
    run once, in one of the replicas."""
    env = service_environment(mariadb, tmp_path, SERVICE_REPORT_CRON="* * * * *")
    rota_command(env, mariadb, "migrate")
    python, *arguments = shlex.split(unit_setting("ExecStart"))
    assert python.endswith("/python"), python
    rota = control(mariadb)
    boundary = now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    if boundary - now() < timedelta(seconds=8):  # a report before the first snapshot would fail
        time.sleep((boundary - now()).total_seconds() + 0.1)
    try:
        with replicas([sys.executable, *arguments], env, tmp_path, 2) as started:
            pids = {process.pid for process in started}
            wait_until(lambda: {w.pid for w in rota.inspect.workers()} == pids, timeout=30)
            assert all(len(w.tasks) == 4 for w in rota.inspect.workers())
            rota_command(env, mariadb, "run-now", "sync_accounts")
            wait_until(lambda: succeeded(rota, "sync_accounts"), timeout=10)
            schedule = rota.inspect.schedule("daily_report")
            assert schedule is not None
            tick = schedule.next_run_at
            wait_until(
                lambda: tick in succeeded(rota, "daily_report"),
                timeout=(tick - now()).total_seconds() + 15,
                every=0.5,
            )
            codes = stop(started)
        assert codes == [0, 0]
        assert rota.inspect.workers() == []
        logs = "\n".join(path.read_text() for path in sorted(tmp_path.glob("*.log")))
        assert logs.count("worker.stopped") == 2, logs
        jobs = rota.inspect.jobs(limit=None)
        runs = Counter((job.task, job.scheduled_at) for job in jobs)
        assert set(runs.values()) == {1}, logs  # one job per tick, and per manual run
        assert {(job.state, job.attempt) for job in jobs} == {(JobState.SUCCEEDED, 1)}, logs
        for job in jobs:
            assert logs.count(f"job.started job_id={job.id} ") == 1, logs
        on_the_minute = [at == at.replace(second=0, microsecond=0) for _, at in runs if at]
        assert on_the_minute.count(False) == 1, logs  # the manual run; every other is a tick
        reports = sorted((tmp_path / "data" / "reports").iterdir())
        assert len(reports) == runs_of(runs, "daily_report") >= 1, logs
        assert json.loads(reports[0].read_text())["by_plan"] == {"pro": 2, "free": 1}
    finally:
        sql_store(rota).engine.dispose()


def runs_of(runs: Counter[tuple[str, datetime | None]], task: str) -> int:
    return sum(count for (name, _), count in runs.items() if name == task)


def succeeded(rota: Rota, task: str) -> list[datetime | None]:
    """The ticks of the jobs of ``task`` that succeeded."""
    jobs = rota.inspect.jobs([JobState.SUCCEEDED], task=task, limit=None)
    return [job.scheduled_at for job in jobs]


def now() -> datetime:
    return datetime.now(timezone.utc)
