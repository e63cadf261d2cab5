"""``rota check``'s exit codes, as a script or a probe reads them: 0 healthy, 1 problems found
(a dead worker is none of its own; a job it leaves stranded is), 2 the check could not be made
(a database that refuses the connection, as the worker reports it, rather than "cannot reach")."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from click.testing import CliRunner, Result
from sqlalchemy.engine import make_url

from rota import Rota
from rota.cli import main
from rota.core.model import WorkerInfo
from tests.cli.conftest import Cli, parsed, parsed_failure
from tests.cli.test_check_server import facts
from tests.conftest import Database

PASSWORD = "N0t-the-r1ght-pw"


def dead_worker(rota: Rota) -> None:
    now = datetime.now(timezone.utc)
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="gone",
            host="gone",
            pid=4321,
            queues=("default",),
            tasks=("known",),
            concurrency=5,
            started_at=now - timedelta(hours=2),
            heartbeat_at=now - timedelta(minutes=3),
            task_queues={"known": "default"},
        )
    )


def test_healthy_with_a_dead_worker_then_problems_once_a_job_is_stranded(
    rota: Rota, cli: Cli
) -> None:
    rota.jobs()  # migrates
    dead_worker(rota)
    healthy = cli("check")
    assert healthy.exit_code == 0, healthy.output
    assert facts(healthy.stdout)["dead workers"] == "1"
    assert parsed(cli("check", "--json"))["ok"] is True

    rota.queue("ghost")
    stranded = cli("check")
    assert stranded.exit_code == 1, stranded.output
    assert stranded.stderr.strip().splitlines()[-1] == (
        "Error: JOBS_STRANDED: 1 pending job(s) of task 'ghost' in queue 'default' wait for a "
        "worker: no live worker registers the task"
    )
    data = parsed_failure(cli("check", "--json"))
    assert data["ok"] is False and data["problems"][0].startswith("JOBS_STRANDED: 1 pending")


def checked(url: str, *options: str) -> Result:
    return CliRunner().invoke(main, ["check", "--url", url, *options])


def test_a_wrong_password_or_unknown_user_is_the_servers_refusal(server_db: Database) -> None:
    url = make_url(server_db.url)
    if server_db.backend == "mariadb":
        url, refusal = url.set(password=PASSWORD), "Access denied for user"
    else:  # trust authentication takes any password: a role that does not exist is refused
        role = f"nobody_{uuid.uuid4().hex[:8]}"
        url, refusal = url.set(username=role, password=PASSWORD), f'role "{role}" does not exist'
    shown = url.render_as_string(hide_password=False)

    result = checked(shown)
    assert result.exit_code == 2, result.output
    assert "STORE_ERROR: the server refused the connection to the " in result.stderr
    assert refusal in result.stderr and "cannot reach" not in result.stderr
    assert facts(result.stdout)["server"] == "refused the connection"
    as_json = checked(shown, "--json")
    assert as_json.exit_code == 2
    (problem,) = json.loads(as_json.stdout)["problems"]
    assert problem.startswith("STORE_ERROR: the server refused") and refusal in problem
    for output in (result.output, as_json.output):
        assert PASSWORD not in output


def test_a_sqlite_file_that_is_no_database_cannot_be_checked(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are notes, not a database\n" * 100)
    result = checked(f"sqlite:///{path}")
    assert result.exit_code == 2, result.output
    assert f"STORE_ERROR: cannot open the sqlite database '{path}'" in result.stderr
    assert "file is not a database" in result.stderr
    assert facts(result.stdout)["server"] == "cannot be opened"
