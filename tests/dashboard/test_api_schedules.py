"""The HTTP API's schedule, queue, count and health routes, each through the façade, and
what each records in a schedule's history."""

from __future__ import annotations

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState
from rota.dashboard.api.auth import token_id
from tests.dashboard.api_client import OPERATE, TOKEN, api_client, error_of

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def nightly(rota: Rota) -> Rota:
    @rota.task(cron="0 3 * * *", tz="Europe/Berlin")
    def cleanup(ctx: JobContext) -> None: ...

    @rota.task
    def report(ctx: JobContext) -> None: ...

    rota.schedule("*/10 * * * *", report, name="reports/hourly")
    rota.drain()
    return rota


def test_list_show_and_filter(nightly: Rota) -> None:
    client = api_client(nightly)
    listed = client.get("/api/schedules").json()["schedules"]
    assert [item["name"] for item in listed] == ["cleanup", "reports/hourly"]
    cleanup = client.get("/api/schedules/cleanup").json()
    assert (cleanup["cron"], cleanup["tz"], cleanup["source"]) == (
        "0 3 * * *",
        "Europe/Berlin",
        "code",
    )
    assert cleanup["overridden"] is False and cleanup["next_run_at"].endswith("+00:00")
    assert client.get("/api/schedules/reports/hourly").json()["source"] == "runtime"
    nightly.pause("cleanup")
    paused = client.get("/api/schedules", params={"state": "paused"}).json()["schedules"]
    assert [item["name"] for item in paused] == ["cleanup"]
    bad = client.get("/api/schedules", params={"state": "sleeping"})
    assert "unknown state" in error_of(bad, 400, "INVALID_ARGUMENTS")


def test_run_now_pause_resume(nightly: Rota) -> None:
    client = api_client(nightly)
    run = client.post("/api/schedules/reports/hourly/run-now")
    assert run.status_code == 201
    job = nightly.job(run.json()["id"])
    assert (job.schedule, job.manual, job.state) == ("reports/hourly", True, JobState.PENDING)
    paused = client.post("/api/schedules/cleanup/pause").json()
    assert paused["changed"] is True and paused["schedule"]["state"] == "paused"
    assert client.post("/api/schedules/cleanup/pause").json()["changed"] is False
    resumed = client.post("/api/schedules/cleanup/resume").json()
    assert resumed["changed"] is True and resumed["schedule"]["state"] == "active"


def test_edit_reset_and_history(nightly: Rota) -> None:
    client = api_client(nightly)
    version = client.get("/api/schedules/cleanup").json()["version"]
    edited = client.patch(
        "/api/schedules/cleanup", json={"cron": "30 4 * * *", "tz": "UTC", "version": version}
    )
    assert edited.status_code == 200, edited.text
    body = edited.json()
    assert (body["cron"], body["tz"], body["overridden"]) == ("30 4 * * *", "UTC", True)
    assert (body["code_cron"], body["code_tz"]) == ("0 3 * * *", "Europe/Berlin")
    stale = client.patch("/api/schedules/cleanup", json={"cron": "0 5 * * *", "version": version})
    error_of(stale, 409, "SCHEDULE_CONFLICT")
    assert nightly.get_schedule("cleanup").spec.cron == "30 4 * * *"
    reset = client.post("/api/schedules/cleanup/reset").json()
    assert reset["changed"] is True and reset["schedule"]["cron"] == "0 3 * * *"
    assert client.post("/api/schedules/cleanup/reset", json={}).json()["changed"] is False
    history = client.get("/api/schedules/cleanup/history").json()["changes"]
    assert [entry["action"] for entry in history] == ["reset", "overridden", "created"]
    assert history[0]["actor"] == history[1]["actor"] == f"api:{token_id(OPERATE)}"
    assert history[1]["new"] == {"cron": "30 4 * * *", "tz": "UTC"}
    assert len(client.get("/api/schedules/cleanup/history?limit=1").json()["changes"]) == 1
    by_dashboard_token = api_client(nightly, TOKEN)
    by_dashboard_token.post("/api/schedules/cleanup/pause")
    assert nightly.schedule_history("cleanup")[0].actor == "api:dashboard-token"


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        ({"cron": "0 0 31 2 * *"}, "INVALID_CRON", "0 0 31 2 * *"),
        ({"tz": "Mars/Olympus"}, "INVALID_TIMEZONE", "Mars/Olympus"),
        ({}, "INVALID_ARGUMENTS", "give cron, tz or both"),
        ({"cron": 5}, "INVALID_ARGUMENTS", "cron must be a string"),
        ({"cron": "* * * * *", "version": -1}, "INVALID_ARGUMENTS", "version"),
        ({"cron": "* * * * *", "every": 5}, "INVALID_ARGUMENTS", "unknown member 'every'"),
    ],
)
def test_bad_edits_are_400(nightly: Rota, body: dict[str, object], code: str, says: str) -> None:
    response = api_client(nightly).patch("/api/schedules/cleanup", json=body)
    assert says in error_of(response, 400, code)
    assert nightly.get_schedule("cleanup").version == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ""),
        ("PATCH", ""),
        ("GET", "/history"),
        ("POST", "/run-now"),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/reset"),
    ],
)
def test_unknown_schedules_are_404(nightly: Rota, method: str, path: str) -> None:
    client = api_client(nightly)
    for name in ("nope", "%E2%80%AEevil"):
        body = {"cron": "* * * * *"} if method == "PATCH" else None
        response = client.request(method, f"/api/schedules/{name}{path}", json=body)
        error_of(response, 404, "SCHEDULE_NOT_FOUND")


def test_queues_counts_and_health(nightly: Rota) -> None:
    client = api_client(nightly)
    nightly.queue("report")
    nightly.queue("report", queue="mail")
    paused = client.post("/api/queues/mail/pause").json()
    assert paused == {"changed": True, "queue": "mail", "paused": True}
    assert client.post("/api/queues/mail/pause").json()["changed"] is False
    assert nightly.paused_queues() == ["mail"]
    queues = {item["name"]: item for item in client.get("/api/queues").json()["queues"]}
    assert queues["mail"]["paused"] is True and queues["mail"]["counts"]["paused"] == 1
    assert queues["default"]["paused"] is False
    assert client.post("/api/queues/mail/resume").json()["changed"] is True
    assert nightly.paused_queues() == []
    bad = client.post("/api/queues/" + "q" * 65 + "/pause")
    assert "queue must be 1 to 64" in error_of(bad, 400, "INVALID_ARGUMENTS")
    counts = client.get("/api/counts").json()
    assert counts["by_state"]["pending"] == 2 and counts["total"] == nightly.counts().total
    assert counts["by_queue"]["mail"]["pending"] == 1 and counts["finished_since"] is None
    since = client.get("/api/counts", params={"finished_since": "2000-01-01T00:00:00Z"}).json()
    assert since["finished_since"] == "2000-01-01T00:00:00+00:00"
    error_of(client.get("/api/counts?finished_since=soon"), 400, "INVALID_ARGUMENTS")
    health = client.get("/api/health").json()
    assert health["status"] == "ok" and health["schema"] == "up to date"
    assert health["namespace"] == nightly.namespace == "default"
    assert health["database"]["product"] == "SQLite" and health["workers"] == 0


def test_an_unreachable_database_is_503() -> None:
    rota = Rota("sqlite:////nonexistent-dir/rota.db", connect_timeout=0.2)
    client = api_client(rota)
    for path in ("/api/health", "/api/jobs", "/api/counts"):
        response = client.get(path)
        assert response.status_code == 503, response.text
        assert response.json()["error"]["code"] in {"DATABASE_UNAVAILABLE", "STORE_ERROR"}
