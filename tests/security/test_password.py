"""A database password in any script or encoding logs in wherever the server takes it, and shows
nowhere: no command's output, log record, error, ``repr``, ``args``, chained error, traceback
or dashboard page.

Issue 15: with ``P@ss:w0rd/Секрет``, PyMySQL (which encodes a string password as Latin-1)
raised a bare ``UnicodeEncodeError`` holding the whole password, ``rota jobs`` printed
``it holds 'Секрет'`` and ``rota check`` crashed with a traceback. Each MariaDB test makes an
account with that password (the server hashes its UTF-8 bytes, as the ``mariadb`` client sends
them) and logs in with it for real. PostgreSQL here trusts local connections, so its password
is sent but never checked: a wrong password is tried on MariaDB only.

A secret is looked for whole and by parts, raw, URL-quoted, ``repr``- and ``ascii``-escaped
(``\\u0421``), as UTF-8 bytes (``\\xd0\\xa1``) and as Latin-1 mojibake (``Ð¡``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pymysql
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.engine import make_url

from rota import ConfigError, JobContext, JobState, Rota, StoreError
from rota.cli import main
from rota.dashboard import create_app
from rota.store import open_store
from rota.store.urls import scrub
from tests.cli.processes import ROOT, running
from tests.conftest import Database
from tests.faults.servers import ascii_quoted, mariadb_user
from tests.helpers import sql_store, wait_until

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

PASSWORD = "P@ss:w0rd/Секрет"
WRONG = "Wr0ng:p@ss/Пароль"
PARTS = {PASSWORD: ("P@ss:w0rd", "Секрет"), WRONG: ("Wr0ng:p@ss", "Пароль")}
LOGGERS = ["", "rota", "sqlalchemy", "sqlalchemy.engine", "sqlalchemy.pool", "alembic"]
LOGGERS += ["pymysql", "psycopg", "asyncio"]
COMMANDS = [["check"], ["check", "--json"], ["jobs"], ["schedules"], ["prune"], ["migrate"]]
COMMANDS += [["migrate", "--sql"]]
PAGES = ("/", "/jobs", "/jobs?state=failed", "/schedules", "/workers")
APP = """
from rota import Rota

rota = Rota(table_prefix={prefix!r}, poll_interval=0.05, connect_timeout=5)


@rota.task
def greet(ctx, name: str) -> str:
    return "hello " + name
"""


def forms(secret: str) -> set[str]:
    """``secret`` and each of its parts: raw, quoted, escaped, as bytes and as mojibake."""
    found: set[str] = set()
    for shown in (secret, *PARTS.get(secret, ())):
        raw = shown.encode("utf-8", "surrogateescape")
        mojibake = raw.decode("latin-1")
        found |= {shown, quote(raw, safe=""), quote(raw), quote_plus(raw)}
        found |= {ascii(shown)[1:-1], repr(shown)[1:-1], repr(raw)[2:-1]}
        found |= {mojibake, repr(mojibake)[1:-1], raw.hex()}
    return found


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.plain = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts += [self.plain.format(record), repr(vars(record))]


ACCOUNTS = ("account", "mariadb_account", "encoded_account")


@pytest.fixture
def logs(request: pytest.FixtureRequest) -> Iterator[Everything]:
    """Every record of every logger at DEBUG (SQLAlchemy's statements included), once the
    test's account exists: its ``CREATE USER`` holds the password."""
    for name in ACCOUNTS:
        if name in request.fixturenames:
            request.getfixturevalue(name)
    handler = Everything()
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    logging.getLogger().addHandler(handler)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@pytest.fixture
def account(server_db: Database) -> Iterator[str]:
    """The URL of an account of this test's own whose password is ``PASSWORD``."""
    if server_db.backend == "mariadb":
        with mariadb_user(server_db, PASSWORD) as url:
            yield url
        return
    user = f"rota_{server_db.prefix.rstrip('_')}"
    engine = server_db.engine()
    with engine.begin() as connection:
        connection.execute(text(f"CREATE ROLE {user} LOGIN PASSWORD '{PASSWORD}'"))
        connection.execute(text(f"GRANT ALL ON SCHEMA public TO {user}"))
    try:
        yield make_url(server_db.url).set(username=user, password=PASSWORD).render_as_string(False)
    finally:
        with engine.begin() as connection:
            connection.execute(text(f"DROP OWNED BY {user}"))
            connection.execute(text(f"DROP ROLE {user}"))
        engine.dispose()


@pytest.fixture
def mariadb_account(mariadb: Database) -> Iterator[str]:
    with mariadb_user(mariadb, PASSWORD) as url:
        yield url


@pytest.fixture(
    params=[PASSWORD.encode("cp1251"), "Grüße/Straße:1"],
    ids=["windows-1251-bytes", "latin-1-range-text"],
)
def encoded_account(mariadb: Database, request: pytest.FixtureRequest) -> Iterator[str]:
    with mariadb_user(mariadb, request.param) as url:
        yield url


def assert_hidden(texts: list[str], logs: Everything, *secrets: str) -> None:
    assert texts and logs.texts, "output and log records were collected"
    shown = [form for secret in secrets for form in forms(secret)]
    for item in [*texts, *logs.texts]:
        for form in shown:
            assert form not in item, f"{form!r} shown in: {item[:400]!r}"


def chain(error: BaseException) -> list[str]:
    """The formatted traceback, then ``str``, ``repr`` and ``args`` of every chained error."""
    texts = ["".join(traceback.format_exception(error))]
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    return texts


def outputs(result: Result) -> list[str]:
    texts = [result.stdout, result.stderr, repr(result.exception)]
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        texts.append("".join(traceback.format_exception(*result.exc_info)))
    return texts


def run_cli(url: str, way: str, tmp_path: Path, *args: str) -> Result:
    """``rota ARGS`` given the URL one ``way``: ``env``, ``file`` or ``argv``."""
    if way == "env":
        return CliRunner().invoke(main, args, env={"ROTA_DATABASE_URL": url})
    if way == "file":
        path = tmp_path / "url"
        path.write_bytes(f"  {url}  \nnot this line\n".encode("utf-8", "surrogateescape"))
        return CliRunner().invoke(main, [*args, "--url-file", str(path)])
    return CliRunner().invoke(main, [*args, "--url", url])


def run_process(url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ROTA_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "rota", *args]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, timeout=60)


def process_texts(process: subprocess.CompletedProcess[bytes]) -> list[str]:
    raw = process.stdout + process.stderr
    return [raw.decode("utf-8", "surrogateescape"), raw.decode("latin-1")]


def pages(rota: Rota) -> list[tuple[int, str]]:
    """The dashboard's pages, as GET requests without a token."""
    client = TestClient(
        create_app(rota), base_url="http://localhost", raise_server_exceptions=False
    )
    return [(response.status_code, response.text) for response in map(client.get, PAGES)]


def test_the_password_logs_in_and_nothing_shows_it(
    account: str, server_db: Database, logs: Everything, tmp_path: Path
) -> None:
    prefix = ["--table-prefix", server_db.prefix]
    migrated = run_cli(account, "file", tmp_path, "migrate", *prefix)
    assert migrated.exit_code == 0 and "applied" in migrated.stdout, migrated.output
    rota = Rota(account, table_prefix=server_db.prefix, connect_timeout=5)

    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("the handler failed")

    failed = rota.queue(boom)
    done = rota.queue("greet", "ada")
    rota.drain()
    assert rota.job(failed).state is JobState.FAILED
    texts = [repr(rota), repr(rota.config), repr(sql_store(rota).engine), *outputs(migrated)]
    texts += [f"{error.message} {error.traceback}" for error in rota.job(failed).errors]
    for way in ("env", "file", "argv"):
        for args in (*COMMANDS, ["job", str(failed)]):
            result = run_cli(account, way, tmp_path, *args, *prefix)
            stranded = args[0] == "check"  # the job of "greet" waits for a worker
            assert result.exit_code == (1 if stranded else 0), (way, args, result.output)
            assert ("ROTA_DATABASE_URL" in result.stderr) is (way == "argv"), result.stderr
            texts += outputs(result)
    check = run_process(account, "check", *prefix)
    assert check.returncode == 1 and b"JOBS_STRANDED" in check.stderr, check.stderr
    (tmp_path / "app.py").write_text(APP.format(prefix=server_db.prefix))
    with running(
        "worker",
        "app.py:rota",
        "--log-level",
        "debug",
        logs=tmp_path / "w",
        cwd=tmp_path,
        env={"ROTA_DATABASE_URL": account},
    ) as worker:
        wait_until(lambda: worker.alive() and rota.job(done).state is JobState.SUCCEEDED, 30)
        assert worker.stop() == 0, worker.output()
    texts += [worker.output(), *process_texts(check)]
    shown = pages(rota)
    assert all(status < 500 for status, _ in shown), [status for status, _ in shown]
    sql_store(rota).engine.dispose()
    assert_hidden(texts + [page for _, page in shown], logs, PASSWORD)


def test_a_wrong_password_is_a_clean_store_error(
    mariadb_account: str, mariadb: Database, logs: Everything, tmp_path: Path
) -> None:
    wrong = make_url(mariadb_account).set(password=WRONG).render_as_string(False)
    rota = Rota(wrong, table_prefix=mariadb.prefix, connect_timeout=5)
    errors = []
    for call in (lambda: rota.queue("greet", "ada"), lambda: rota.job(1), rota.drain):
        with pytest.raises(StoreError) as raised:
            call()
        assert raised.value.code == "STORE_ERROR" and "Access denied" in str(raised.value)
        errors.append(raised.value)
    texts = [text for error in errors for text in chain(error)]
    for way in ("env", "file", "argv"):
        for args in (*COMMANDS[:-1], ["job", "1"]):
            result = run_cli(wrong, way, tmp_path, *args, "--table-prefix", mariadb.prefix)
            assert result.exit_code == (2 if args[0] == "check" else 1), (way, args, result.output)
            assert "Access denied" in result.output, result.output
            texts += outputs(result)
    (tmp_path / "app.py").write_text(APP.format(prefix=mariadb.prefix))
    for args in (["check"], ["jobs"], ["worker", f"{tmp_path / 'app.py'}:rota"]):
        process = run_process(wrong, *args)
        assert process.returncode == (2 if args == ["check"] else 1), process.stderr
        assert b"Access denied" in process.stderr and b"Traceback" not in process.stderr
        texts += process_texts(process)
    shown = pages(rota)
    assert [status for status, _ in shown] == [503] * len(PAGES)
    sql_store(rota).engine.dispose()
    assert_hidden(texts + [page for _, page in shown], logs, PASSWORD, WRONG)


def test_a_url_the_driver_cannot_send_is_a_config_error(
    server_db: Database, logs: Everything, tmp_path: Path
) -> None:
    """psycopg sends only UTF-8 (a lone surrogate is a byte that was not); PyMySQL is given
    the password's bytes, but encodes the user name itself. Neither error is chained: its
    ``args`` held the whole password or connection string."""
    odd = f"{PASSWORD}\udce9"
    url = make_url(server_db.url).set(username="rota", password="-").render_as_string(False)
    if server_db.backend == "mariadb":
        target = url.replace("//rota:-@", f"//r\udce9ta:{ascii_quoted(PASSWORD)}@")
    else:
        target = url.replace(":-@", f":{ascii_quoted(odd)}@")
    rota = Rota(target, table_prefix=server_db.prefix, connect_timeout=5)
    with pytest.raises(ConfigError) as raised:
        rota.queue("greet", "ada")
    error = raised.value
    assert "cannot send this URL's user, password or database name" in str(error)
    assert error.__cause__ is None and error.__context__ is None
    sql_store(rota).engine.dispose()
    texts = chain(error)
    for way in ("env", "file"):
        result = run_cli(target, way, tmp_path, "check", "--table-prefix", server_db.prefix)
        assert result.exit_code == 2 and "CONFIG_ERROR" in result.output, result.output
        texts += outputs(result)
    assert_hidden(texts, logs, PASSWORD, odd)


def test_a_password_in_another_encoding_logs_in(
    encoded_account: str, mariadb: Database, logs: Everything, tmp_path: Path
) -> None:
    """Bytes that are not UTF-8 (in the environment or a file) are sent as they are, and a
    password within Latin-1 as UTF-8, as the ``mariadb`` client sends it (PyMySQL sent Latin-1,
    so the server refused it)."""
    url, prefix = encoded_account, ["--table-prefix", mariadb.prefix]
    migrated = run_cli(url, "file", tmp_path, "migrate", *prefix)
    assert migrated.exit_code == 0 and "applied" in migrated.stdout, migrated.output
    checked = run_cli(url, "env", tmp_path, "check", *prefix)
    assert checked.exit_code == 0, checked.output
    process = run_process(url, "check", *prefix)
    assert process.returncode == 0, process.stderr
    texts = [*outputs(migrated), *outputs(checked), *process_texts(process)]
    assert_hidden(texts, logs, str(make_url(url).password), PASSWORD)


def test_scrub_hides_every_form_of_the_password() -> None:
    url = make_url("mysql://u@db/app").set(password=PASSWORD).render_as_string(False)
    for form in forms(PASSWORD):
        assert scrub(f"before {form} after", url) == "before *** after", form
    assert scrub("mysql database 'app' on db", url) == "mysql database 'app' on db"


def test_a_driver_error_that_repeats_the_password_is_hidden_and_unchained() -> None:
    """No driver rota ships repeats a password; should one, the chain would still hold it."""
    store = open_store(f"mysql://u:{quote(PASSWORD, safe='')}@127.0.0.1:1/test")
    original = pymysql.err.OperationalError(1045, f"Access denied for 'u' ({PASSWORD})")
    with pytest.raises(StoreError) as raised, store.database.translate_errors():
        raise sa_exc.OperationalError("SELECT 1", {}, original)
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    assert str(raised.value) == "OperationalError: (1045, \"Access denied for 'u' (***)\")"
    store.dispose()


def test_an_option_the_driver_refuses_is_a_config_error() -> None:
    url = f"mysql://u:{quote(PASSWORD, safe='')}@127.0.0.1:1/test?no_such_option=1"
    rota = Rota(url, connect_timeout=1)
    with pytest.raises(ConfigError, match=r"refused this URL's settings.*no_such_option") as raised:
        rota.job(1)
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    sql_store(rota).engine.dispose()


def test_the_url_comes_from_a_file_and_argv_warns(tmp_path: Path) -> None:
    runner = CliRunner()
    secret_url = f"mysql://u:{quote(PASSWORD, safe='')}@db/app"
    warned = runner.invoke(main, ["migrate", "--sql", "--url", secret_url])
    assert warned.exit_code == 0 and "CREATE TABLE" in warned.stdout, warned.output
    assert warned.stderr.count("\n") == 1 and "--url-file" in warned.stderr, warned.stderr
    assert [form for form in forms(PASSWORD) if form in warned.output] == []
    database = tmp_path / "rota.db"
    path = tmp_path / "url"
    path.write_bytes(f"\ufeff sqlite:///{database} \r\nsecond line\n".encode())
    applied = runner.invoke(main, ["migrate", "--url-file", str(path)])
    assert applied.exit_code == 0 and database.exists() and applied.stderr == "", applied.output
    plain = runner.invoke(main, ["check", "--url", f"sqlite:///{database}"])
    assert plain.exit_code == 0 and plain.stderr == "", plain.output
    piped = runner.invoke(main, ["check", "--url-file", "-"], input=f"sqlite:///{database}\n")
    assert piped.exit_code == 0, piped.output
    (tmp_path / "empty").write_text("\n")
    for args in (
        ["--url-file", str(tmp_path / "missing")],
        ["--url-file", str(tmp_path / "empty")],
        ["--url-file", str(path), "--url", f"sqlite:///{database}"],
    ):
        refused = runner.invoke(main, ["check", *args])
        assert refused.exit_code == 2, (args, refused.output)
