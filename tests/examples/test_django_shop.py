"""The example Django project's own tests (``examples/django_shop/tests``), with pytest-django on
SQLite, MariaDB through mysqlclient and through PyMySQL, and PostgreSQL.

Each runs in a pytest process of its own, in the project's directory, as its README says to
run them, the four at once: Django's settings (and which module stands in for ``MySQLdb``) are
set once per process, and this session may already have set up the test project of
``tests/django``. The database comes in ``$SHOP_DATABASE_URL``; outside CI an unreachable
server skips its run, in CI it fails (``tests.conftest``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import SERVERS, _server_error, chosen
from tests.requirements import require

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "django_shop"
RUNS = {
    "sqlite": (None, "sqlite"),
    "mariadb-mysqlclient": ("mariadb", "mysql"),
    "mariadb-pymysql": ("mariadb", "mysql+pymysql"),
    "postgres": ("postgres", "postgresql"),
}
SUMMARY = re.compile(r"^(\d+) passed in [\d.]+s", re.MULTILINE)


def database_url(backend: str | None, scheme: str) -> str:
    """The example's ``$SHOP_DATABASE_URL`` for the test server of ``backend``."""
    if backend is None:
        return "sqlite:///db.sqlite3"
    variable, default = SERVERS[backend]
    url = make_url(os.environ.get(variable, default)).set(drivername=scheme)
    return url.render_as_string(hide_password=False)


def start(backend: str | None, scheme: str) -> subprocess.Popen[str] | str:
    """The example's tests on ``backend`` through ``scheme``, started; or why they cannot be."""
    if backend is not None and not chosen(backend):
        return f"{backend} is not among --backends"
    error = None if backend is None else _server_error(backend)
    if error is not None:
        return error
    env = {**os.environ, "SHOP_DATABASE_URL": database_url(backend, scheme)}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # tests/django's, when its conftest ran first
    command = [sys.executable, "-m", "pytest", "-q", "--ds=shop_project.settings"]
    return subprocess.Popen(
        command, cwd=EXAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, subprocess.Popen[str] | str]]:
    """Every run started at once, since they share nothing (each names its test database after
    its process): the four take about as long as the slowest."""
    started = {run: start(*RUNS[run]) for run in RUNS}
    yield started
    for process in started.values():
        if isinstance(process, subprocess.Popen):
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdout is not None:  # a run whose test was deselected was never read
                process.stdout.close()


@pytest.mark.slow
@pytest.mark.parametrize("run", list(RUNS))
def test_the_example_django_project_passes_its_tests(
    runs: dict[str, subprocess.Popen[str] | str], run: str
) -> None:
    process = runs[run]
    if isinstance(process, str):
        require(process)
    assert isinstance(process, subprocess.Popen)
    output = process.communicate(timeout=100)[0]
    assert process.returncode == 0, output
    summary = SUMMARY.search(output)  # every test passed: none skipped, none failed
    assert summary is not None, output
    assert int(summary.group(1)) >= 10, output
