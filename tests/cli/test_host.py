"""An application running the CLI as a command of its own (``loading.Host``, as Django's
``manage.py rota``): its Rota stands for APP, and for the defaults of ``--url`` and
``--table-prefix``; ``worker --processes`` children run the application's command."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner, Result

from rota import Rota
from rota.cli import admin, main
from rota.cli.loading import ROTA_COMMAND, Host

pytestmark = pytest.mark.sqlite_only

MANAGE = ("python", "manage.py", "rota")


def hosted(rota: Rota, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj=Host(lambda: rota, MANAGE))


def test_database_commands_default_to_the_hosts_database_and_prefix(rota: Rota) -> None:
    @rota.task
    def hello(ctx: object) -> None: ...

    job = rota.queue(hello)
    listed = hosted(rota, "jobs")
    assert listed.exit_code == 0, listed.output
    assert f"{job}" in listed.output and "hello" in listed.output
    other = hosted(rota, "jobs", "--table-prefix", "other_")  # given: it wins
    assert other.exit_code == 1
    assert "rota migrate" in other.output


def test_app_is_required_without_a_host() -> None:
    for command in ("worker", "dashboard"):
        result = CliRunner().invoke(main, [command])
        assert result.exit_code == 2
        assert "Missing argument 'APP'." in result.output


@pytest.fixture
def supervised(monkeypatch: pytest.MonkeyPatch, rota: Rota) -> list[list[str]]:
    """The commands ``worker --processes`` would start, none of them started (an APP given
    loads the test's Rota)."""
    children: list[list[str]] = []

    def supervise(child: list[str], processes: int, grace: float) -> int:
        children.append(child)
        return 0

    monkeypatch.setattr(admin, "supervise", supervise)
    monkeypatch.setattr(admin, "configure_logging", lambda *args: logging.NullHandler())
    monkeypatch.setattr(admin, "load_app", lambda target: rota)
    return children


@pytest.mark.parametrize(
    ("args", "child"),
    [((), [*MANAGE, "worker"]), (("app:rota",), [*ROTA_COMMAND, "worker", "app:rota"])],
    ids=["the host's", "an APP's"],
)
def test_worker_children_run_the_hosts_command(
    rota: Rota, supervised: list[list[str]], args: tuple[str, ...], child: list[str]
) -> None:
    result = hosted(rota, "worker", *args, "--processes", "2", "--grace", "3")
    assert result.exit_code == 0, result.output
    assert [command[: len(child) + 2] for command in supervised] == [[*child, "--grace", "3.0"]]
