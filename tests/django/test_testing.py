"""A project tested with Django's own tools, as docs/django.md's "Testing" says: a copy of the
trial project (``trial/``) with the page's app (its model, tasks and view) and that section's
tests written into it, run by a real
``manage.py test`` and a real pytest-django session, on SQLite (Django's in-memory test
database), MariaDB and PostgreSQL.

Each run must pass and exit 0, and leave nothing behind: no test database on the server (rota's
pool is closed before the runner drops it), no file named after SQLite's in-memory database.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from rota.store.urls import normalise_url
from tests.conftest import SERVERS, _server_error
from tests.requirements import in_ci

TRIAL = Path(__file__).with_name("trial")
DOCS = Path(__file__).parents[2] / "docs" / "django.md"
CONFTEST = '''
from rota.contrib.django import get_rota
from rota.contrib.django.project import BUILT


def pytest_collection_finish(session):
    """Collection imported test_shop.py, whose `rota` pytest probes: it must not be built."""
    assert get_rota().__dict__["_state"] != BUILT, "collection built the project's Rota"
'''
pytestmark = pytest.mark.slow


def backends() -> list[object]:
    params: list[object] = [pytest.param("sqlite", id="sqlite")]
    for backend in SERVERS:
        error = _server_error(backend)
        skip = error is not None and not in_ci()
        marks = [pytest.mark.skip(reason=str(error))] if skip else []
        params.append(pytest.param(backend, marks=marks, id=backend))
    return params


WRITTEN = ["shop/models.py", "shop/tasks.py", "shop/tests.py", "shop/views.py", "test_shop.py"]
"""The files of docs/django.md the trial takes: the shop app and its tests (the page's project
is ``mysite``, whose routes the trial's ``trial_site`` has too)."""


def documented() -> dict[str, str]:
    """The Python files docs/django.md writes, by the path of their title."""
    return dict(re.findall(r'```python title="([^"]+)"\n(.*?)```', DOCS.read_text(), re.S))


@pytest.fixture
def trial(tmp_path: Path) -> Path:
    project = tmp_path / "trial"
    shutil.copytree(TRIAL, project)
    files = documented()
    for path in WRITTEN:
        (project / path).write_text(files[path])
    (project / "conftest.py").write_text(CONFTEST)
    return project


def run(project: Path, backend: str, test_name: str, *command: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROTA_", "DJANGO_"))}
    env["TRIAL_TEST_NAME"] = test_name
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), os.environ.get("PYTHONPATH")]))
    if backend != "sqlite":
        variable, default = SERVERS[backend]
        env["TRIAL_DATABASE_URL"] = os.environ.get(variable, default)
    done = subprocess.run(
        [sys.executable, *command],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def databases(backend: str) -> set[str]:
    """The databases of the server ``backend`` names."""
    variable, default = SERVERS[backend]
    engine = create_engine(normalise_url(os.environ.get(variable, default)))
    query = (
        "SELECT schema_name FROM information_schema.schemata"
        if backend == "mariadb"
        else "SELECT datname FROM pg_database"
    )
    try:
        with engine.connect() as connection:
            return {str(name) for name in connection.execute(text(query)).scalars()}
    finally:
        engine.dispose()


def assert_nothing_left(project: Path, backend: str, test_name: str) -> None:
    if backend == "sqlite":
        assert not [path.name for path in project.iterdir() if path.name.startswith("file:")]
    else:
        assert test_name not in databases(backend)


@pytest.mark.parametrize("backend", backends())
def test_manage_py_test_passes_exits_0_and_drops_its_database(trial: Path, backend: str) -> None:
    test_name = f"test_trial_{uuid.uuid4().hex[:8]}"
    output = run(trial, backend, test_name, "manage.py", "test", "shop", "shop.checks")
    assert re.search(r"Ran 5 tests.*\n\nOK", output, re.S), output
    assert_nothing_left(trial, backend, test_name)


@pytest.mark.parametrize("backend", backends())
def test_pytest_django_passes_without_building_rota_at_collection(
    trial: Path, backend: str
) -> None:
    test_name = f"test_trial_{uuid.uuid4().hex[:8]}"
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shop.py", "shop/checks.py"]
    output = run(trial, backend, test_name, *args)
    assert "4 passed" in output, output
    assert_nothing_left(trial, backend, test_name)
