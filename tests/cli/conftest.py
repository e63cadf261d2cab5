"""``cli(*args)`` runs a ``rota`` command against the test's database, as a user would."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rota.cli import main
from tests.conftest import Database

Cli = Callable[..., Result]


@pytest.fixture
def cli(db: Database) -> Cli:
    def run(*args: str, input: str | None = None) -> Result:
        """``input`` is what the user types at the command's prompts."""
        url = ["--url", db.url, "--table-prefix", db.prefix]
        result = CliRunner().invoke(main, [*args, *url], input=input)
        assert "\x1b[" not in result.output, "no colour codes when not a terminal"
        return result

    return run


def parsed(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def parsed_failure(result: Result) -> Any:
    """The JSON a command printed before exiting 1."""
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)
