"""``Rota(log_format="json")`` under a real ``rota worker``: every line it writes is one JSON
object, rota's events, the handlers' records and the application's own alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rota import Rota
from tests.cli.processes import Running, running
from tests.helpers import migrated, wait_until

pytestmark = pytest.mark.slow

APP = "tests.apps.json_app:app"


@pytest.fixture
def control(tmp_path: Path) -> Iterator[Rota]:
    with migrated(f"sqlite:///{tmp_path}/jobs.db", "json_") as rota:
        yield rota


def env(control: Rota) -> dict[str, str]:
    return {"ROTA_TEST_URL": control.config.url, "ROTA_TEST_PREFIX": "json_"}


def run_two_jobs(control: Rota, worker: Running) -> tuple[int, int]:
    greeted = control.queue("greet", "world")
    crashed = control.queue("crash")
    wait_until(
        lambda: worker.alive() and all(control.job(j).state.is_final for j in (greeted, crashed)),
        timeout=30,
    )
    assert worker.stop() == 0, worker.output()
    return greeted, crashed


def json_lines(worker: Running) -> list[dict[str, Any]]:
    """Every line of stdout and stderr, each of which must be one JSON object."""
    lines = worker.output().splitlines()
    assert lines, "the worker logged nothing"
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}\n--- all output ---\n{worker.output()}")
        assert isinstance(record, dict), line
        assert {"ts", "level", "logger"} <= record.keys(), line
        assert datetime.fromisoformat(record["ts"]).utcoffset() is not None, line
        records.append(record)
    return records


def one(records: list[dict[str, Any]], **expected: Any) -> dict[str, Any]:
    found = [r for r in records if all(r.get(k) == v for k, v in expected.items())]
    assert len(found) == 1, (expected, records)
    return found[0]


def test_worker_of_a_json_app_writes_only_json_lines(control: Rota, tmp_path: Path) -> None:
    with running("worker", APP, "--grace", "5", logs=tmp_path / "w", env=env(control)) as worker:
        greeted, crashed = run_two_jobs(control, worker)
    records = json_lines(worker)

    one(records, logger="tests.apps.json_app", message="importing the service", level="info")
    handler = one(records, logger="rota.task.greet", message="greeting world")
    assert (handler["level"], handler["job_id"], handler["task"], handler["attempt"]) == (
        "info",
        greeted,
        "greet",
        1,
    )
    standard = one(records, logger="tests.apps.json_app", level="warning")
    assert standard["message"] == "a standard logger\nwith a message on two lines"
    caught = one(records, message="caught and logged")
    assert (caught["level"], caught["job_id"]) == ("error", greeted)
    assert "ZeroDivisionError: division by zero" in caught["exception"]

    events = [r["event"] for r in records if "event" in r]
    assert events[0] == "worker.started" and events[-1] == "worker.stopped", events
    succeeded = one(records, event="job.succeeded")
    assert (succeeded["job_id"], succeeded["task"], succeeded["logger"]) == (
        greeted,
        "greet",
        "rota.events",
    )
    assert "message" not in succeeded, "an event's fields are keys, not a JSON string in a string"
    failed = one(records, event="job.failed")
    assert (failed["job_id"], failed["level"]) == (crashed, "error")
    assert "the handler gave up" in json.dumps(failed)
    stopping = one(records, event="worker.stopping")
    assert "waiting up to 5 s" in stopping["message"]


def test_supervised_workers_of_a_json_app_write_only_json_lines(
    control: Rota, tmp_path: Path
) -> None:
    with running(
        "worker", APP, "--processes", "2", "--grace", "5", logs=tmp_path / "w", env=env(control)
    ) as supervisor:
        # Both workers up before the stop: one alone may run both jobs, and a stop while the
        # other is still starting ends it (cleanly) before it logs worker.started.
        wait_until(
            lambda: (
                supervisor.alive() and supervisor.output().count('"event": "worker.started"') == 2
            ),
            timeout=30,
        )
        greeted, _ = run_two_jobs(control, supervisor)
    records = json_lines(supervisor)

    started = [r for r in records if r.get("event") == "supervisor.started"]
    assert len(started) == 2, records
    assert all(r["message"].startswith("started worker process ") for r in started)
    assert len([r for r in records if r.get("event") == "worker.started"]) == 2
    one(records, logger="rota.task.greet", message="greeting world", job_id=greeted)


def test_log_format_text_overrides_the_apps_json(control: Rota, tmp_path: Path) -> None:
    with running(
        "worker", APP, "--log-format", "text", logs=tmp_path / "w", env=env(control)
    ) as worker:
        run_two_jobs(control, worker)
    lines = worker.output().splitlines()
    assert any(" INFO    rota.task.greet: greeting world" in line for line in lines), lines
    assert any(" rota.events: job.succeeded job_id=" in line for line in lines), lines
    assert not any(line.startswith("{") for line in lines), lines


def test_a_worker_that_cannot_start_says_why_in_json(tmp_path: Path) -> None:
    app = tmp_path / "unopenable.py"
    database = tmp_path / "no-such-directory" / "jobs.db"
    app.write_text(
        f"from rota import Rota\nrota = Rota('sqlite:///{database}', log_format='json')\n"
    )
    with running("worker", f"{app}:rota", logs=tmp_path / "w") as worker:
        assert worker.process.wait(timeout=30) == 1
    (record,) = json_lines(worker)
    assert (record["level"], record["event"], record["code"]) == (
        "error",
        "worker.failed",
        "STORE_ERROR",
    )
    assert "unable to open database file" in record["message"]


def test_a_worker_that_crashes_logs_its_traceback_in_one_json_line(tmp_path: Path) -> None:
    app = tmp_path / "buggy.py"
    app.write_text(
        "from rota import Rota\n\n"
        "class Buggy(Rota):\n"
        "    def run(self, grace=30.0, **served):\n"
        "        raise RuntimeError('a bug in the worker')\n\n"
        f"rota = Buggy('sqlite:///{tmp_path}/jobs.db', log_format='json')\n"
    )
    with running("worker", f"{app}:rota", logs=tmp_path / "w") as worker:
        assert worker.process.wait(timeout=30) == 1
    (record,) = json_lines(worker)
    assert (record["level"], record["event"]) == ("error", "worker.failed")
    assert "RuntimeError('a bug in the worker')" in record["message"]
    assert record["exception"].endswith("RuntimeError: a bug in the worker")
