"""The HTTP API's writes on the database servers: queueing by name (with a unique key) and a
schedule's manual run, where the SQL beneath differs from SQLite's."""

from __future__ import annotations

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState
from tests.dashboard.api_client import api_client


@pytest.mark.parametrize("db", ["mariadb", "postgres"], indirect=True)
def test_queue_and_run_now_on_servers(rota: Rota) -> None:
    @rota.task(cron="0 3 * * *")
    def nightly(ctx: JobContext, label: str = "tick") -> str:
        return label

    rota.drain()
    client = api_client(rota)
    body = {"task": "nightly", "kwargs": {"label": "ünï"}, "unique_key": "k-1", "priority": 7}
    first = client.post("/api/jobs", json=body)
    again = client.post("/api/jobs", json=body)
    assert first.status_code == again.status_code == 201, first.text
    assert first.json() == again.json()  # the unique key holds: the same job
    run = client.post("/api/schedules/nightly/run-now")
    assert run.status_code == 201, run.text
    manual = rota.job(run.json()["id"])
    assert (manual.schedule, manual.manual, manual.state) == ("nightly", True, JobState.PENDING)
    rota.drain()
    shown = client.get(f"/api/jobs/{first.json()['id']}").json()
    assert (shown["state"], shown["result"], shown["priority"]) == ("succeeded", "ünï", 7)
    listed = client.get("/api/jobs", params={"task": "nightly", "state": "succeeded"}).json()
    assert {job["id"] for job in listed["jobs"]} == {first.json()["id"], manual.id}
