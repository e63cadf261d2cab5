"""The app in a project: ``tasks.py`` discovered at start-up, the project's Rota built on the
test database at its first use, and ``manage.py rota <command>`` (``call_command``, and one real
``manage.py rota worker``)."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path

import pytest
from click.testing import CliRunner
from django.core.management import call_command
from django.db import connections
from sqlalchemy.engine import make_url

from rota import ConfigError, JobContext, Rota
from rota.cli import main as cli_main
from rota.contrib.django import DjangoRota, get_rota, project
from rota.contrib.django.connections import RequestTask
from rota.contrib.django.databases import database_url
from rota.testing import FakeClock
from tests.django.conftest import on, prefix
from tests.helpers import sql_store, wait_until

MANAGE = Path(__file__).with_name("manage.py")
ROOT = MANAGE.parents[2]
SETTINGS_MODULE = "tests.django.shop.tasks.settings_module"
"""The task of ``shop/tasks.py``, named by its module path."""


@pytest.fixture
def project_rota(
    monkeypatch: pytest.MonkeyPatch, make_rota: Callable[..., DjangoRota]
) -> DjangoRota:
    """The project's Rota (``get_rota()``) and its tasks, on SQLite with a prefix of this
    test's."""
    rota = make_rota("default")
    for definition in get_rota().registry:
        rota.define_task(definition)
    monkeypatch.setattr(project, "_project", rota)
    return rota


def manage(*args: str) -> str:
    out = StringIO()
    call_command("rota", *args, stdout=out)
    return out.getvalue()


def test_tasks_modules_are_discovered_and_run_as_requests() -> None:
    from rota.contrib.django import rota

    assert rota is get_rota()
    definition = rota.registry.get(SETTINGS_MODULE)
    assert isinstance(definition, RequestTask)  # a sync handler between close_old_connections
    assert definition.handler.__module__ == "tests.django.shop.tasks"


def receipt(ctx: JobContext) -> str:
    """A handler of the same name as ``tests.django.shop.jobs.receipt``."""
    return "test_app"


@pytest.mark.parametrize("alias", on("sqlite", "mariadb", "postgres"))
def test_tasks_are_named_by_module_path_so_two_apps_may_share_a_name(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    from tests.django.shop import jobs

    rota = make_rota(alias)
    rota.task(receipt)
    rota.task(retries=0)(jobs.receipt)  # no ConfigError: another task
    assert rota.task(name="short")(receipt) is receipt  # name= still wins
    names = ["tests.django.shop.jobs.receipt", "tests.django.test_app.receipt", "short"]
    assert sorted(rota.registry.names()) == sorted(names)
    ids = [rota.queue(jobs.receipt), rota.queue("tests.django.test_app.receipt")]
    assert [rota.job(job).task for job in ids] == names[:2]
    assert rota.drain().succeeded == 2
    assert [rota.result(job) for job in ids] == ["shop", "test_app"]


ticks_run: list[datetime] = []


def close_stale_carts(ctx: JobContext) -> None:
    """docs/django.md's cron task, noting the tick it ran for."""
    assert ctx.scheduled_at is not None and not ctx.manual
    ticks_run.append(ctx.scheduled_at)


@pytest.mark.parametrize("alias", on("sqlite", "mariadb", "postgres"))
def test_a_cron_task_declared_as_the_docs_do_runs_at_its_tick(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    """``@rota.task(cron=..., tz=...)`` on the project's Rota, as docs/django.md shows it: a
    schedule named by the task's module path, run once at 03:00 Paris time (02:00 UTC)."""
    clock = FakeClock(datetime(2030, 1, 1, 1, 0, tzinfo=timezone.utc))
    rota = make_rota(alias, CLOCK=clock)
    rota.task(cron="0 3 * * *", tz="Europe/Paris")(close_stale_carts)
    ticks_run.clear()
    name = "tests.django.test_app.close_stale_carts"
    assert rota.drain().succeeded == 0  # 02:00 in Paris: not yet
    tick = datetime(2030, 1, 1, 2, 0, tzinfo=timezone.utc)
    assert rota.get_schedule(name).next_run_at == tick
    clock.set(tick)
    assert rota.drain().succeeded == 1
    clock.set(tick + timedelta(minutes=5))
    assert rota.drain().succeeded == 0
    assert ticks_run == [tick]


@pytest.mark.parametrize("alias", on("sqlite"))
def test_the_project_rota_is_built_on_the_test_database(alias: str) -> None:
    """``tasks.py`` ran before pytest-django made the test database; the Rota is built later,
    at its first use, on the database Django uses then."""
    rota = get_rota()
    test_database = connections[alias].settings_dict["NAME"]
    # pytest-xdist's workers each get their own: test.sqlite3_gw0, ...
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    assert test_database.endswith("test.sqlite3" + (f"_{worker}" if worker else ""))
    assert rota.config.url.endswith(test_database)
    assert rota.config.poll_interval == 0.05  # from settings.ROTA


@pytest.mark.parametrize("alias", on("sqlite"))
def test_hooks_registered_before_the_build_are_kept(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    rota = make_rota(alias)
    seen: list[int | None] = []
    rota.on("job.succeeded", lambda event: seen.append(event.job_id))
    with pytest.raises(ConfigError, match="unknown event"):
        rota.on("job.finished", print)  # checked when registered, not at the build

    @rota.task
    def noop(ctx: JobContext) -> None: ...

    job = rota.queue(noop)  # builds it
    rota.drain()
    assert seen == [job]


@pytest.mark.parametrize("alias", on("sqlite"))
def test_a_rota_built_before_django_switched_databases_says_so(
    make_rota: Callable[..., DjangoRota], alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rota = make_rota(alias)
    built_on = rota.config.url
    monkeypatch.setitem(connections[alias].settings_dict, "NAME", "/elsewhere/other.sqlite3")
    with pytest.raises(ConfigError, match="a test database"):
        rota.queue(SETTINGS_MODULE)
    assert rota.config.url == built_on


@pytest.mark.parametrize("alias", on("sqlite"))
def test_migrate_check_and_jobs_through_call_command(project_rota: DjangoRota, alias: str) -> None:
    assert "applied" in manage("migrate")
    assert "already up to date" in manage("migrate")
    report = json.loads(manage("check", "--json"))
    assert report["ok"] is True
    assert report["database"].startswith("sqlite database")
    assert manage("jobs") == "no jobs\n"
    job = project_rota.queue(SETTINGS_MODULE)
    listed = json.loads(manage("jobs", "--json"))
    assert [(row["id"], row["task"], row["state"]) for row in listed] == [
        (job, SETTINGS_MODULE, "pending")
    ]
    assert project_rota.drain().succeeded == 1
    assert json.loads(manage("job", str(job), "--json"))["result"] == "tests.django.settings"


@pytest.mark.parametrize("command", ["worker", "dashboard"])
def test_help_of_commands_taking_app_leaves_app_out(command: str) -> None:
    """``manage.py rota worker`` runs the project's Rota: its usage and help have no APP,
    which ``rota worker --help`` keeps."""
    shown = manage(command, "--help")
    assert shown.startswith(f"Usage: manage.py rota {command} [OPTIONS]\n"), shown
    assert "APP" not in shown and "project's Rota" in shown
    plain = CliRunner().invoke(cli_main, [command, "--help"], prog_name="rota")
    assert f"rota {command} [OPTIONS] [APP]" in plain.output and "Rota at APP" in plain.output


@pytest.mark.parametrize("alias", on("sqlite"))
def test_errors_exit_as_rota_does(
    project_rota: DjangoRota, alias: str, capsys: pytest.CaptureFixture[str]
) -> None:
    manage("migrate")
    with pytest.raises(SystemExit) as usage:
        manage("jobs", "--state", "bogus")
    assert usage.value.code == 2
    assert "Invalid value for '--state'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as missing:
        manage("job", "999999")
    assert missing.value.code == 1
    assert "JOB_NOT_FOUND" in capsys.readouterr().err
    manage("--settings=tests.django.settings", "jobs")  # manage.py's own option is dropped


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[tuple[Rota, dict[str, str]]]:
    """A Rota on the SQLite file a ``manage.py`` process will use, and that process's env."""
    table_prefix = prefix()
    env = {
        **os.environ,
        "ROTA_TEST_DJANGO_DIR": str(tmp_path),
        "ROTA_TEST_DJANGO_PREFIX": table_prefix,
        "DJANGO_SETTINGS_MODULE": "tests.django.settings",
    }
    rota = Rota(f"sqlite:///{tmp_path}/main.sqlite3", table_prefix=table_prefix)
    rota.jobs()
    yield rota, env
    sql_store(rota).engine.dispose()


@pytest.mark.slow
def test_manage_py_rota_worker_runs_the_projects_tasks(shared: tuple[Rota, dict[str, str]]) -> None:
    rota, env = shared
    job = rota.queue(SETTINGS_MODULE)
    worker = subprocess.Popen(
        [sys.executable, str(MANAGE), "rota", "worker", "--grace", "5"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: rota.job(job).state.value == "succeeded", timeout=30)
        assert rota.result(job) == "tests.django.settings"
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, output


@pytest.mark.slow
def test_manage_py_rota_worker_runs_django_tasks_of_any_module_and_queue_and_logs_them(
    shared: tuple[Rota, dict[str, str]],
) -> None:
    """With ``TASKS`` on ``RotaBackend``: a job of a task defined outside ``tasks.py`` (here
    written by name, as a web process that imported it writes it), on a queue of ``QUEUES``
    that no task declares, is run by a real worker, which logs Django's lines for it."""
    rota, env = shared
    job = rota.queue("tests.django.shop.jobs.shout", "hi", queue="reports")
    worker = subprocess.Popen(
        [sys.executable, str(MANAGE), "rota", "worker", "--grace", "5"],
        cwd=ROOT,
        env={**env, "ROTA_TEST_DJANGO_TASKS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert worker.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(worker.stdout or ()), daemon=True)
    reader.start()
    path = "path=tests.django.shop.jobs.shout"
    try:
        wait_until(lambda: rota.job(job).state.value == "succeeded", timeout=30)
        assert rota.result(job) == "HI"
        assert rota.job(job).lease_owner
        # task_finished is sent by a hook after the commit the test just saw
        wait_until(lambda: any(f"{path} state=SUCCESSFUL" in line for line in lines), timeout=10)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        reader.join(timeout=10)
        worker.stdout.close()
    output = "".join(lines)
    assert worker.returncode == 0, output
    assert f"Task id={job} {path} state=RUNNING" in output, output
    assert f"Task id={job} {path} state=SUCCESSFUL" in output, output


@pytest.mark.parametrize(
    "name", ["_mock_name", "__wrapped__", "_pytestfixturefunction", "__test__", "_private"]
)
def test_probing_an_unbuilt_rota_does_not_build_it(
    make_rota: Callable[..., DjangoRota], name: str
) -> None:
    """pytest's collection and ``mock`` probe a module's objects (``from
    rota.contrib.django import rota`` at a test module's top): only Rota's own names build."""
    rota = make_rota("default")
    assert not hasattr(rota, name)
    assert rota.__dict__["_state"] == project.NEW
    inspect.unwrap(rota)  # type: ignore[arg-type]  # what pytest's collection calls
    assert rota.__dict__["_state"] == project.NEW
    assert rota.config.table_prefix.startswith("t")  # a name Rota has: built
    assert rota.__dict__["_state"] == project.BUILT
    assert not hasattr(rota, name)


def test_the_names_that_build_are_those_rota_sets(tmp_path: Path) -> None:
    plain = Rota(f"sqlite:///{tmp_path}/plain.db")
    assert set(vars(plain)) - {"registry"} == project.ROTA_ATTRIBUTES


def test_sqlite_in_memory_test_database_is_opened_by_its_uri() -> None:
    name = "file:memorydb_default?mode=memory&cache=shared"
    url = database_url("sqlite", {"NAME": name}, "pysqlite")
    assert make_url(url).query == {"mode": "memory", "cache": "shared", "uri": "true"}
    assert make_url(url).database == "file:memorydb_default"
    assert database_url("sqlite", {"NAME": "/srv/db.sqlite3"}, "pysqlite").endswith(
        "/srv/db.sqlite3"
    )
