"""The APP of ``rota worker`` and ``rota dashboard``: a module or a file path, and when it names
no Rota, a usage error of one line (exit code 2), never a traceback."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota import JobState, Rota
from tests.cli.processes import running
from tests.cli.test_inspect import closed_port
from tests.cli.test_subprocess import rota_command
from tests.helpers import migrated, wait_until

pytestmark = pytest.mark.slow

APP = """\
import os

from greetings import greeting  # a module beside this file

from rota import JobContext, Rota

rota = Rota(os.environ.get("SERVICE_URL", "sqlite:///service.db"), poll_interval=0.1)
settings = {"name": "service"}


@rota.task
def hello(ctx: JobContext, name: str) -> None:
    ctx.logger.info(greeting(name))
"""
BROKEN = {
    "broken.py": "from rota import Rota\n\nrota = Rota(\n",
    "needs.py": "from rota import Rota\nimport rota_no_such_dependency\n",
    "boom.py": "from rota import Rota\n\nraise RuntimeError('no configuration')\n",
    "json.py": "from rota import Rota\nrota = Rota()\n",
}


@pytest.fixture
def service(tmp_path: Path) -> Path:
    """A directory that is not the current one, holding an application and its helper."""
    folder = tmp_path / "service"
    folder.mkdir()
    (folder / "app.py").write_text(APP)
    (folder / "greetings.py").write_text("def greeting(name):\n    return f'hello {name}'\n")
    for name, text in BROKEN.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def control(tmp_path: Path) -> Iterator[Rota]:
    with migrated(f"sqlite:///{tmp_path}/jobs.db") as rota:
        yield rota


def test_worker_runs_the_rota_of_a_file(service: Path, control: Rota, tmp_path: Path) -> None:
    job_id = control.queue("hello", "world")
    with running(
        "worker",
        f"{service}/app.py:rota",
        "--grace",
        "5",
        logs=tmp_path / "w",
        cwd=tmp_path,
        env={"SERVICE_URL": control.config.url},
    ) as worker:
        wait_until(lambda: worker.alive() and control.job(job_id).state.is_final, timeout=30)
        assert control.job(job_id).state is JobState.SUCCEEDED
        assert worker.stop() == 0, worker.output()
    assert "rota.task.hello: hello world" in worker.output()


def test_a_relative_file_path_and_a_file_without_attribute(
    service: Path, control: Rota, tmp_path: Path
) -> None:
    job_id = control.queue("hello", "there")
    with running(
        "worker",
        "service/app.py",  # its only Rota
        logs=tmp_path / "w",
        cwd=tmp_path,
        env={"SERVICE_URL": control.config.url},
    ) as worker:
        wait_until(lambda: worker.alive() and control.job(job_id).state.is_final, timeout=30)
        assert control.job(job_id).state is JobState.SUCCEEDED
        assert worker.stop() == 0, worker.output()


def test_dashboard_serves_the_rota_of_a_file(service: Path, control: Rota, tmp_path: Path) -> None:
    port = closed_port()
    with running(
        "dashboard",
        f"{service}/app.py:rota",
        "--port",
        str(port),
        logs=tmp_path / "d",
        cwd=tmp_path,
        env={"SERVICE_URL": control.config.url},
    ) as dashboard:

        def serves() -> bool:
            dashboard.alive()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                    return page.status == 200 and b"rota" in page.read()
            except OSError:
                return False

        wait_until(serves, timeout=30)
        assert dashboard.stop() == 0, dashboard.output()


BAD = [
    ("{service}/missing.py:rota", "no such file: {service}/missing.py"),
    ("{service}/app.py:nope", "module 'app' has no attribute 'nope'"),
    ("{service}/app.py:settings", "is a dict, not a Rota"),
    ("{service}/broken.py:rota", "SyntaxError: '(' was never closed ({service}/broken.py, line 3)"),
    (
        "{service}/needs.py:rota",
        "ModuleNotFoundError: No module named 'rota_no_such_dependency' "
        "({service}/needs.py, line 2)",
    ),
    ("{service}/boom.py:rota", "RuntimeError: no configuration ({service}/boom.py, line 3)"),
    ("{service}/json.py:rota", "it would import as module 'json', which is "),
    ("{service}", "not a file: {service}"),
    ("no_such_module:rota", "ModuleNotFoundError: No module named 'no_such_module'"),
    ("tests.apps:nothing", "module 'tests.apps' has no attribute 'nothing'"),
    ("tests.apps", "no Rota in module 'tests.apps'"),
    (":rota", "expected MODULE:ATTR or PATH.py:ATTR"),
]
# Every command loads its APP through the one ``load_app``, which words the reason: ``worker``
# is given every way to name no Rota, the others one of each way loading fails (a file, an
# attribute, what is not a Rota, an import raising, a module) in processes of their own.
OTHERS = [BAD[0], BAD[1], BAD[2], BAD[3], BAD[8]]
CASES = [
    *((["worker"], *case) for case in BAD),
    *(
        (command, *case)
        for command in (["worker", "--processes", "2"], ["dashboard"])
        for case in OTHERS
    ),
]


@pytest.mark.parametrize(("command", "target", "reason"), CASES)
def test_an_app_that_names_no_rota_is_a_one_line_usage_error(
    service: Path, command: list[str], target: str, reason: str
) -> None:
    target, reason = (text.format(service=service) for text in (target, reason))
    result = rota_command(*command, target)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    *usage, error = result.stderr.rstrip("\n").splitlines()
    assert [line for line in usage if line and not line.startswith(("Usage:", "Try "))] == []
    assert error.startswith("Error: Invalid value for 'APP': ")
    assert f"{target!r}" in error and reason in error, error


def test_an_import_error_deep_in_the_app_shows_its_traceback_at_debug_level(
    service: Path,
) -> None:
    (service / "tasks_raising.py").write_text(
        "def setup():\n    raise KeyError('SMTP_HOST')\n\n\nsetup()\n"
    )
    (service / "main.py").write_text(
        "from rota import Rota\nimport tasks_raising\n\nrota = Rota()\n"
    )
    target = f"{service}/main.py:rota"
    quiet = rota_command("worker", target)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr, quiet.stderr
    assert f"KeyError: 'SMTP_HOST' ({service}/tasks_raising.py, line 2)" in quiet.stderr

    debug = rota_command("worker", target, "--log-level", "debug")
    assert debug.returncode == 2, debug.stderr
    traceback = debug.stderr.split("Traceback (most recent call last):")[1]
    assert f'File "{service}/main.py", line 2, in <module>' in traceback
    assert f'File "{service}/tasks_raising.py", line 2, in setup' in traceback
    assert "KeyError: 'SMTP_HOST'" in traceback
    assert debug.stderr.rstrip().splitlines()[-1].startswith("Error: Invalid value for 'APP'")
