"""The database password appears in no log record, error, ``rota check`` output nor dashboard page.

On MariaDB and PostgreSQL each test creates an account of its own whose password is distinctive
(``S3cr3t-<hex>`` plus characters that URLs must encode) and drops it afterwards.  PostgreSQL here
trusts local connections, so its password is never checked; MariaDB checks it, so a wrong
password (itself distinctive) really fails there.  The tests then look for the password, its
URL-encoded form and its random part (which any other encoding would still contain) in:

* every log record of every logger (rota, SQLAlchemy, Alembic, the drivers) at DEBUG while a
  worker starts, runs, fails a job, and stops;
* ``str``, ``repr`` and the formatted traceback of every error in the chain raised for a wrong
  password, an unreachable port, a missing database, a bad table prefix, a malformed URL, a
  missing schema and an unknown driver;
* the output of ``rota check`` (and ``jobs``, ``job``, ``schedules``, ``migrate``, ``prune``),
  with the URL in ``--url`` and in ``$ROTA_DATABASE_URL``, in-process and as a subprocess;
* every dashboard page, error pages included;
* ``repr(rota)``, ``repr(rota.config)`` and ``str(rota.config)``.

A worker's logs, the errors and the CLI's output are also looked at through mysqlclient
(``mysql+mysqldb://``), whose error texts are its C library's, not PyMySQL's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import JobState, WorkerInfo
from rota.dashboard import create_app
from rota.observe.logs import JsonLines
from rota.store.urls import normalise_url
from tests.conftest import drop_prefixed_tables, server_url
from tests.faults.conftest import EVERY_SERVER
from tests.helpers import eventually, sql_store, through

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
LOGGERS: tuple[str, ...] = ("", "rota", "sqlalchemy", "sqlalchemy.engine", "sqlalchemy.pool")
LOGGERS += ("alembic", "psycopg", "pymysql", "asyncio")


@dataclass
class Secret:
    """One distinctive string that must never be shown."""

    value: str
    token: str
    """Its random part: whatever escaping or encoding is applied, this survives."""

    def forms(self) -> list[str]:
        return [self.value, quote(self.value, safe=""), quote_plus(self.value), self.token]


def secret(label: str) -> Secret:
    token = uuid.uuid4().hex
    return Secret(f"{label}-{token}@:/%#?", token)


@dataclass
class Account:
    """A database user of this test's own, its passwords and the URLs that carry them."""

    backend: str
    admin_url: str
    user: str
    password: Secret
    wrong: Secret
    prefix: str = field(default_factory=lambda: f"s{uuid.uuid4().hex[:10]}_")

    def url(self, password: Secret | None = None, **parts: Any) -> str:
        admin = make_url(self.admin_url)
        values: dict[str, Any] = {
            "drivername": admin.drivername,
            "username": self.user,
            "password": (password or self.password).value,
            "host": admin.host,
            "port": admin.port,
            "database": admin.database,
        }
        values.update(parts)
        return URL.create(**values).render_as_string(hide_password=False)

    def secrets(self) -> list[Secret]:
        return [self.password, self.wrong]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["mariadb", "postgres"])
def account(request: pytest.FixtureRequest, mysql_driver: str | None) -> Iterator[Account]:
    """A user on the server of the test's parameter, reached through its driver (``MYSQLDB``)."""
    admin_url = through(server_url(request.param), mysql_driver)
    made = Account(
        request.param,
        admin_url,
        f"rota_{uuid.uuid4().hex[:12]}",
        secret("S3cr3t"),
        secret("Wr0ng"),
    )
    engine = create_engine(normalise_url(admin_url))
    password = made.password.value
    database = make_url(admin_url).database
    if request.param == "mariadb":
        setup = [
            f"CREATE USER '{made.user}'@'%' IDENTIFIED BY '{password}'",
            f"GRANT ALL PRIVILEGES ON `{database}`.* TO '{made.user}'@'%'",
        ]
        teardown = [f"DROP USER '{made.user}'@'%'"]
    else:
        setup = [
            f"CREATE ROLE {made.user} LOGIN PASSWORD '{password}'",
            f"GRANT ALL ON SCHEMA public TO {made.user}",
        ]
        teardown = [f"DROP OWNED BY {made.user}", f"DROP ROLE {made.user}"]
    try:
        with engine.begin() as connection:
            for statement in setup:
                connection.execute(text(statement))
        yield made
    finally:
        drop_prefixed_tables(admin_url, made.prefix)
        with engine.begin() as connection:
            for statement in teardown:
                connection.execute(text(statement))
        engine.dispose()


class Everything(logging.Handler):
    """Every record of every logger, as text, as JSON and with its raw fields."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.plain = logging.Formatter("%(name)s %(levelname)s %(message)s")
        self.json = JsonLines()

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.plain.format(record))
        self.texts.append(self.json.format(record))
        self.texts.append(repr(vars(record)))


@pytest.fixture
def logs(account: Account) -> Iterator[Everything]:
    """Records of all loggers at DEBUG, SQLAlchemy's and Alembic's included (echo is off).

    It starts once the account exists, so the ``CREATE USER`` that sets the password is not
    among them.
    """
    handler = Everything()
    root = logging.getLogger()
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    root.addHandler(handler)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def assert_hidden(account: Account, texts: list[str], logs: Everything) -> None:
    assert texts, "something was collected"
    assert logs.texts, "the loggers were captured"
    for collected in (texts, logs.texts):
        for item in collected:
            for hidden in account.secrets():
                for form in hidden.forms():
                    assert form not in item, f"secret shown in: {item[:300]}"


def describe_error(error: BaseException) -> list[str]:
    """``str``, ``repr`` and the traceback of the error and of every error it chains."""
    texts = ["".join(traceback.format_exception(error))]
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return texts


def failure_of(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError(f"{call} did not fail")


@pytest.mark.parametrize("account", EVERY_SERVER, indirect=True)
def test_a_worker_logs_nothing_of_the_password(account: Account, logs: Everything) -> None:
    url = account.url()
    rota = Rota(url, table_prefix=account.prefix, poll_interval=0.05, connect_timeout=5)

    @rota.task
    def greet(ctx: JobContext, name: str) -> None:
        ctx.logger.info("hello %s", name)

    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("the handler failed")

    @rota.task(cron="*/5 * * * *")
    def tick(ctx: JobContext) -> None: ...

    async def work() -> list[int]:
        await rota.start()
        try:
            ids = [rota.queue(greet, name) for name in ("ada", "grace", "alan")]
            ids.append(await rota.aqueue(boom))

            def finished() -> bool:
                return all(rota.job(job_id).state.is_final for job_id in ids)

            await eventually(finished)
        finally:
            await rota.stop(grace=5)
        return ids

    ids = asyncio.run(work())
    states = [rota.job(job_id).state for job_id in ids]
    assert states == [JobState.SUCCEEDED] * 3 + [JobState.FAILED]
    failed = rota.job(ids[-1])
    texts = [repr(rota), repr(rota.config), str(rota.config), repr(sql_store(rota).engine)]
    texts += [f"{e.code} {e.type} {e.message} {e.traceback}" for e in failed.errors]
    assert "***" in repr(rota.config) and account.user in repr(rota.config)
    assert any("job.failed" in item for item in logs.texts), "rota's execution log was seen"
    assert any("sqlalchemy" in item for item in logs.texts), "SQLAlchemy's debug log was seen"
    sql_store(rota).engine.dispose()
    assert_hidden(account, texts, logs)


@pytest.mark.parametrize("account", EVERY_SERVER, indirect=True)
def test_errors_do_not_show_the_password(account: Account, logs: Everything) -> None:
    scheme = account.url().split("://")[0].split("+")[0]
    bad_urls = {
        "unreachable port": account.url(port=closed_port()),
        "missing database": account.url(database="no_such_database"),
        "unknown driver": account.url(drivername=f"{scheme}+nosuchdriver"),
        "malformed port": account.url().replace(
            f"@{make_url(account.admin_url).host}:", "@localhost:port", 1
        ),
    }
    if account.backend == "mariadb":  # PostgreSQL here trusts local connections
        bad_urls["wrong password"] = account.url(account.wrong)
    errors: dict[str, BaseException] = {}
    for label, url in bad_urls.items():

        def use(url: str = url) -> None:
            rota = Rota(url, table_prefix=account.prefix, connect_timeout=0.5)
            try:
                rota.job(1)
            finally:
                sql_store(rota).engine.dispose()

        errors[label] = failure_of(use)
    errors["bad table prefix"] = failure_of(lambda: Rota(account.url(), table_prefix="bad-one!"))
    missing = Rota(account.url(), table_prefix=f"m{account.prefix}", auto_migrate=False)
    errors["missing schema"] = failure_of(lambda: missing.job(1))
    sql_store(missing).engine.dispose()

    codes = {label: getattr(error, "code", None) for label, error in errors.items()}
    assert codes["unreachable port"] == "DATABASE_UNAVAILABLE"
    assert codes["malformed port"] == codes["bad table prefix"] == "CONFIG_ERROR"
    # The server answered and refused: waiting would not help, so it is reported at once.
    assert codes["missing database"] == codes["missing schema"] == "STORE_ERROR"
    if account.backend == "mariadb":
        assert "Access denied" in str(errors["wrong password"])
    texts = [text for error in errors.values() for text in describe_error(error)]
    assert_hidden(account, texts, logs)


@pytest.mark.slow
@pytest.mark.parametrize("account", EVERY_SERVER, indirect=True)
def test_rota_check_and_the_cli_do_not_show_the_password(
    account: Account, logs: Everything
) -> None:
    url = account.url()
    seeded = Rota(url, table_prefix=account.prefix)

    @seeded.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("the handler failed")

    failed = seeded.queue(boom)
    seeded.drain()
    sql_store(seeded).engine.dispose()

    targets = {
        "good": url,
        "unreachable": account.url(port=closed_port()),
        "malformed": url.replace("://", ":/", 1),
        "bad port": url.replace(f":{make_url(url).port}/", ":port/", 1),
    }
    if account.backend == "mariadb":
        targets["wrong password"] = account.url(account.wrong)
    outputs: list[str] = []
    codes: dict[tuple[str, ...], int] = {}
    runner = CliRunner()
    for label, target in targets.items():
        for prefix in (account.prefix, f"m{account.prefix}", "bad-prefix!"):
            for args in (["check"], ["check", "--json"], ["jobs"], ["job", str(failed)]):
                given = runner.invoke(main, [*args, "--url", target, "--table-prefix", prefix])
                from_env = runner.invoke(
                    main, [*args, "--table-prefix", prefix], env={"ROTA_DATABASE_URL": target}
                )
                for result in (given, from_env):
                    outputs.append(result.output)
                    assert result.exception is None or isinstance(result.exception, SystemExit), (
                        f"rota {args[0]} crashed on the {label} URL: {result.exception!r}"
                    )
                key = (label, prefix, *args)
                codes[key] = given.exit_code
        # migrate and prune may still crash on a malformed URL: their traceback must not tell.
        commands = [["schedules"], ["migrate", "--sql"], ["migrate"]]
        for args in [*commands, *([["prune"]] if label == "good" else [])]:
            result = runner.invoke(main, [*args, "--url", target, "--table-prefix", account.prefix])
            outputs += [result.output, repr(result.exception)]
            if result.exc_info is not None and not isinstance(result.exception, SystemExit):
                outputs.append("".join(traceback.format_exception(*result.exc_info)))
    assert codes[("good", account.prefix, "check")] == 0
    assert codes[("unreachable", account.prefix, "check")] == 2, "cannot check"
    assert codes[("good", f"m{account.prefix}", "check")] == 2, "no schema: cannot check"
    assert codes[("malformed", account.prefix, "check")] == 2
    assert codes[("bad port", account.prefix, "check", "--json")] == 2
    assert codes[("good", "bad-prefix!", "check")] == 2
    assert any("boom" in output and "EXECUTION_FAILED" in output for output in outputs)

    env = {**os.environ, "ROTA_DATABASE_URL": targets.get("wrong password", targets["good"])}
    for command in (["check"], ["check", "--json"]):
        process = subprocess.run(
            [sys.executable, "-m", "rota", *command, "--table-prefix", account.prefix],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        outputs += [process.stdout, process.stderr]
        assert process.returncode == (2 if account.backend == "mariadb" else 0), process.stderr
    assert_hidden(account, outputs, logs)


def test_dashboard_pages_do_not_show_the_password(account: Account, logs: Everything) -> None:
    rota = Rota(account.url(), table_prefix=account.prefix, connect_timeout=5)

    @rota.task
    def greet(ctx: JobContext, name: str) -> None: ...

    @rota.task(retries=0, queue="mail")
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("the handler failed")

    @rota.task(cron="*/5 * * * *", tz="Europe/Berlin")
    def tick(ctx: JobContext) -> None: ...

    succeeded = rota.queue(greet, "ada")
    failed = rota.queue(boom)
    rota.drain()
    waiting = rota.queue("no_such_task")
    now = rota.clock.now()
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="box-1:4321",
            host="box-1",
            pid=4321,
            queues=("default", "mail"),
            tasks=("greet", "boom"),
            concurrency=5,
            started_at=now - timedelta(hours=1),
            heartbeat_at=now,
        )
    )
    client = TestClient(
        create_app(rota), base_url="http://localhost", raise_server_exceptions=False
    )
    pages = ["/", "/jobs", "/jobs?state=failed", "/jobs?queue=mail", f"/jobs/{succeeded}"]
    pages += [f"/jobs/{failed}", f"/jobs/{waiting}", "/schedules", "/workers", "/metrics"]
    pages += ["/static/dashboard.css", "/static/dashboard.js", "/login"]
    texts: list[str] = []
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        texts.append(response.text)
    errors = {"/jobs/999999999": 404, "/jobs?page=abc": 400, "/nowhere": 404, "/jobs/x/retry": 405}
    for path, status in errors.items():
        response = client.get(path)
        assert response.status_code == status, path
        texts.append(response.text)
    assert "the handler failed" in texts[pages.index(f"/jobs/{failed}")]
    sql_store(rota).engine.dispose()

    broken = {"unreachable": account.url(port=closed_port())}
    if account.backend == "mariadb":
        broken["wrong password"] = account.url(account.wrong)
    for url in broken.values():
        down = Rota(url, table_prefix=account.prefix, connect_timeout=0.5)
        down_client = TestClient(
            create_app(down), base_url="http://localhost", raise_server_exceptions=False
        )
        for path in ("/", "/jobs", f"/jobs/{failed}", "/schedules", "/workers", "/metrics"):
            response = down_client.get(path)
            assert response.status_code == 503, path
            texts.append(response.text)
        sql_store(down).engine.dispose()
    assert_hidden(account, texts, logs)
