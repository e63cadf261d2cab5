"""A worker runs only on a database that was named (the argument or ``$ROTA_DATABASE_URL``):
one on the default file would schedule every tick a second time beside the real workers.
Queueing and inspecting on the default stay allowed; a SQLite URL is how to ask for it."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from rota import ConfigError, Rota
from rota.cli import main
from tests.conftest import Database

REFUSAL = "set $ROTA_DATABASE_URL or pass the URL"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current directory of its own and no ``$ROTA_DATABASE_URL``."""
    monkeypatch.delenv("ROTA_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_and_start_refuse_the_default_database(elsewhere: Path) -> None:
    rota = Rota()
    with pytest.raises(ConfigError, match=r"\$ROTA_DATABASE_URL") as refused:
        rota.run()
    assert "Rota('sqlite:///rota.db')" in str(refused.value)
    with pytest.raises(ConfigError, match="set \\$ROTA_DATABASE_URL or pass the URL"):
        asyncio.run(rota.start())
    assert not (elsewhere / "rota.db").exists()


def test_queueing_on_the_default_database_stays_allowed(elsewhere: Path) -> None:
    rota = Rota()

    @rota.task
    def noop() -> None: ...

    assert rota.queue(noop) >= 1
    rota.close()
    assert (elsewhere / "rota.db").exists()


async def started(rota: Rota) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    rota.on("worker.started", lambda event: seen.update(event.fields))
    await rota.start()
    await rota.stop(grace=1)
    rota.close()
    return seen


def test_a_named_sqlite_file_runs_and_the_start_says_where(elsewhere: Path) -> None:
    seen = asyncio.run(started(Rota(f"sqlite:///{elsewhere}/jobs.db", table_prefix="named_")))
    assert seen["host"] == os.uname().nodename
    assert seen["table_prefix"] == "named_"
    assert "jobs.db" in seen["database"]


def test_the_start_names_a_servers_database_without_its_password(
    postgres: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Host, database, prefix and namespace, in the event and its log line; the password (which
    PostgreSQL's trust authentication here accepts and ignores) nowhere."""
    url = make_url(postgres.url).set(password="s3cret-pw").render_as_string(False)
    rota = Rota(url, table_prefix=postgres.prefix, namespace="billing")
    with caplog.at_level(logging.INFO, logger="rota"):
        seen = asyncio.run(started(rota))
    assert "'test' on 127.0.0.1:5432" in seen["database"], seen
    assert (seen["table_prefix"], seen["namespace"]) == (postgres.prefix, "billing")
    assert "s3cret" not in repr(seen) and "s3cret" not in caplog.text
    assert "worker.started" in caplog.text


def test_the_environment_names_the_database(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROTA_DATABASE_URL", f"sqlite:///{elsewhere}/env.db")
    seen = asyncio.run(started(Rota()))
    assert "env.db" in seen["database"] and seen["table_prefix"] == "rota_"


def test_rota_worker_refuses_without_a_database(elsewhere: Path) -> None:
    (elsewhere / "unnamed.py").write_text("from rota import Rota\n\nrota = Rota()\n")
    for processes in ("1", "2"):
        result = CliRunner().invoke(
            main, ["worker", f"{elsewhere}/unnamed.py:rota", "--processes", processes]
        )
        assert result.exit_code == 1, result.output
        assert "CONFIG_ERROR" in result.output and REFUSAL in result.output
    assert not (elsewhere / "rota.db").exists()
