"""``rota check`` names the server it reached and whether it takes writes (issue 21), on every
backend's shared server, which is writable; tests/faults/test_read_only.py checks servers of
its own while they are read-only."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url

from rota import Rota
from tests.cli.conftest import Cli, parsed
from tests.conftest import Database


def facts(out: str) -> dict[str, str]:
    """The first block of ``rota check``'s text: a name and a value per line."""
    pairs = (
        re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in out.split("\n\n")[0].splitlines()
    )
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def test_check_names_the_server_reached_and_that_it_is_writable(
    db: Database, rota: Rota, cli: Cli
) -> None:
    rota.jobs()  # migrates
    url = make_url(db.url)
    reached = None if db.backend == "sqlite" else f"{url.host}:{url.port}"

    result = cli("check")
    assert result.exit_code == 0, result.output
    shown = facts(result.stdout)
    assert shown["writable"] == "yes"
    if reached is None:
        assert "reached" not in shown, "a local file is reached through no host"
    else:
        assert shown["reached"].startswith(reached)
    if db.backend == "mariadb":
        assert re.fullmatch(rf"{reached} \(node .+:\d+\)", shown["reached"]), "the node's name"

    data = parsed(cli("check", "--json"))
    assert (data["writable"], data["read_only"]) == (True, None)
    assert data["reached"] is None if reached is None else data["reached"].startswith(reached)
