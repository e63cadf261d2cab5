"""The web dashboard over every backend: pages, auth, CSRF, actions, escaping, metrics."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import httpx
import pytest
from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import JobState, WorkerInfo
from rota.core.schedules import ScheduleState
from rota.dashboard import create_app
from rota.testing import FakeClock

pytestmark = pytest.mark.sqlite_only

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

XSS = "<script>alert(1)</script>"
TOKEN = "s3cret-token-0123456789"


@dataclass
class Seeded:
    rota: Rota
    succeeded: int
    failed: int
    running: int
    scheduled: int


@pytest.fixture
def seeded(make_rota: Callable[..., Rota], clock: FakeClock) -> Seeded:
    """Succeeded, failed (with a hostile argument), running and scheduled jobs, a live worker."""
    rota = make_rota()

    @rota.task
    def greet(ctx: JobContext, name: str) -> None: ...

    @rota.task(retries=0, queue="mail")
    def boom(ctx: JobContext, note: str) -> None:
        raise RuntimeError(f"cannot handle {note}")

    @rota.task(cron="*/5 * * * *", tz="Europe/Berlin")
    def tick(ctx: JobContext) -> None: ...

    @rota.task
    def slow(ctx: JobContext) -> None: ...

    succeeded = rota.queue(greet, "ada")
    failed = rota.queue(boom, XSS)
    rota.drain()
    clock.advance(timedelta(minutes=5))
    rota.drain()
    scheduled = rota.store.reads.jobs(task="tick")[0].id  # the 09:05 tick, newest first
    running = rota.queue(slow)
    now = clock.now()
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="box-1:4321",
            host="box-1",
            pid=4321,
            queues=("default", "mail"),
            tasks=("greet", "boom", "slow"),
            concurrency=5,
            started_at=now - timedelta(hours=1),
            heartbeat_at=now - timedelta(seconds=3),
        )
    )
    claimed = rota.store.jobs.claim(
        "box-1:4321", ["default"], ["slow"], 1, now, now + timedelta(seconds=60)
    )
    assert [job.id for job in claimed] == [running]
    return Seeded(rota, succeeded, failed, running, scheduled)


def csrf(client: TestClient, path: str = "/schedules") -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf_token" value="([0-9a-f]+)"', page.text)
    assert found, "every page with a form embeds the CSRF token"
    return found.group(1)


def test_every_page_renders(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    overview = client.get("/")
    assert overview.status_code == 200
    assert "<svg" in overview.text and "3 succeeded, 1 failed" in overview.text
    assert "box-1" in overview.text and f"#{seeded.running} slow" in overview.text
    assert ">mail</a>" in overview.text

    listing = client.get("/jobs")
    assert listing.status_code == 200
    for job_id in (seeded.succeeded, seeded.failed, seeded.running, seeded.scheduled):
        assert f'href="/jobs/{job_id}"' in listing.text
    only_failed = client.get("/jobs", params={"state": "failed", "queue": "mail", "page": "1"})
    assert f'href="/jobs/{seeded.failed}"' in only_failed.text
    assert f'href="/jobs/{seeded.succeeded}"' not in only_failed.text
    by_id = client.get("/jobs", params={"id": str(seeded.succeeded)})
    assert f'href="/jobs/{seeded.succeeded}"' in by_id.text
    assert f'href="/jobs/{seeded.failed}"' not in by_id.text
    assert "No jobs match" in client.get("/jobs", params={"task": "nothing"}).text

    failed = client.get(f"/jobs/{seeded.failed}")
    assert failed.status_code == 200
    assert "EXECUTION_FAILED" in failed.text and "Traceback" in failed.text
    assert "/retry" in failed.text
    scheduled = client.get(f"/jobs/{seeded.scheduled}")
    assert scheduled.status_code == 200 and "2026-03-02 09:05:00Z" in scheduled.text

    schedules = client.get("/schedules")
    assert schedules.status_code == 200
    assert "*/5 * * * *" in schedules.text and "Europe/Berlin" in schedules.text
    assert "Every fifth minute of every hour" in schedules.text
    assert schedules.text.count("<li>") == 5
    assert "2026-03-02 10:10+01:00" in schedules.text
    assert f'href="/jobs/{seeded.scheduled}"' in schedules.text  # the last run's outcome
    assert "/tick/pause" in schedules.text and "/tick/run-now" in schedules.text

    workers = client.get("/workers")
    assert workers.status_code == 200
    assert "box-1" in workers.text and "4321" in workers.text and "3s ago" in workers.text
    assert f'href="/jobs/{seeded.running}"' in workers.text

    assert client.get("/static/dashboard.css").status_code == 200
    assert client.get("/static/dashboard.js").status_code == 200


def test_unknown_job_and_bad_queries(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    for path in ("/jobs/999999", "/jobs/abc", "/jobs/99999999999999999999999"):
        missing = client.get(path)
        assert missing.status_code == 404, path
        assert "Not found" in missing.text
    bad = {
        "page=abc": "page must be a whole number",
        "page=0": "page must be a whole number",
        "state=bogus": "unknown state",
        "id=x1": "a job id is a positive whole number",
    }
    for query, message in bad.items():
        response = client.get(f"/jobs?{query}")
        assert response.status_code == 400, query
        assert message in response.text
    assert client.get("/nowhere").status_code == 404


def test_user_data_is_escaped(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    for path in (f"/jobs/{seeded.failed}", "/jobs"):
        page = client.get(path)
        assert XSS not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    hostile = client.get("/jobs", params={"task": XSS})
    assert XSS not in hostile.text and "&lt;script&gt;" in hostile.text


def test_retry_action_moves_a_failed_job_to_pending(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    page = f"/jobs/{seeded.failed}"
    token = csrf(client, page)
    response = client.post(
        f"{page}/retry",
        data={"csrf_token": token, "next": "/jobs?state=failed"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/jobs?state=failed"
    assert seeded.rota.job(seeded.failed).state is JobState.PENDING
    again = client.post(f"{page}/retry", data={"csrf_token": token}, follow_redirects=False)
    assert again.status_code == 409 and "only failed or cancelled" in again.text
    # Without a next field, the same-origin Referer is where it goes back to.
    cancel = client.post(
        f"{page}/cancel",
        data={"csrf_token": token},
        headers={"referer": "http://localhost/jobs?page=1"},
        follow_redirects=False,
    )
    assert cancel.status_code == 303 and cancel.headers["location"] == "/jobs?page=1"
    assert seeded.rota.job(seeded.failed).state is JobState.CANCELLED
    # Nor does an action redirect off the dashboard.
    evil = client.post(
        f"{page}/retry",
        data={"csrf_token": token, "next": "https://evil.example/"},
        follow_redirects=False,
    )
    assert evil.status_code == 303 and evil.headers["location"] == page


def test_schedule_actions(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    token = csrf(client, "/schedules")
    rota = seeded.rota

    def post(path: str) -> int:
        response: httpx.Response = client.post(
            path, data={"csrf_token": token}, follow_redirects=False
        )
        assert response.status_code in (303, 404, 409), response.text
        return response.status_code

    assert post("/schedules/tick/pause") == 303
    schedule = rota.store.schedules.get("tick")
    assert schedule is not None and schedule.state is ScheduleState.PAUSED
    assert post("/schedules/tick/pause") == 409
    assert post("/schedules/tick/resume") == 303
    before = len(rota.store.reads.jobs(task="tick"))
    assert post("/schedules/tick/run-now") == 303
    assert len(rota.store.reads.jobs(task="tick")) == before + 1
    assert post("/schedules/missing/pause") == 404


def test_pause_and_resume_a_job_and_a_queue(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    rota = seeded.rota
    waiting = rota.queue("greet", "grace", delay=3600)
    page = client.get(f"/jobs/{waiting}")
    assert f'action="/jobs/{waiting}/pause"' in page.text
    token = csrf(client, f"/jobs/{waiting}")

    def post(path: str, **fields: str) -> int:
        data = {"csrf_token": token, **fields}
        response: httpx.Response = client.post(path, data=data, follow_redirects=False)
        assert response.status_code in (303, 404, 409), response.text
        return response.status_code

    assert post(f"/jobs/{waiting}/pause") == 303
    assert rota.job(waiting).state is JobState.PAUSED
    assert f'action="/jobs/{waiting}/resume"' in client.get(f"/jobs/{waiting}").text
    assert post(f"/jobs/{waiting}/pause") == 409
    assert post(f"/jobs/{waiting}/resume") == 303
    assert rota.job(waiting).state is JobState.PENDING
    assert post("/jobs/999999/pause") == 404

    overview = client.get("/")
    assert 'action="/queues/pause"' in overview.text and 'value="mail"' in overview.text
    hostile = "../schedules/tick"
    assert post("/queues/pause", queue=hostile) == 303
    assert rota.paused_queues() == [hostile]
    assert rota.store.schedules.get("tick").state is ScheduleState.ACTIVE  # type: ignore[union-attr]
    assert post("/queues/pause", queue="mail") == 303
    assert post("/queues/pause", queue="mail") == 409
    overview = client.get("/")
    assert 'action="/queues/resume"' in overview.text and "state-paused" in overview.text
    assert "is paused: no worker claims its jobs" in client.get(f"/jobs/{seeded.failed}").text
    assert post("/queues/resume", queue="mail") == 303
    assert rota.paused_queues() == [hostile]
    assert post("/queues/resume", queue="mail") == 409
    bad = client.post("/queues/pause", data={"csrf_token": token, "queue": "a\x00b"})
    assert bad.status_code == 400


def test_actions_need_post_and_csrf(seeded: Seeded) -> None:
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    retry = f"/jobs/{seeded.failed}/retry"
    assert client.get(retry).status_code == 405
    assert client.get("/schedules/tick/pause").status_code == 405
    client.get("/")  # sets the CSRF cookie
    assert client.post(retry, follow_redirects=False).status_code == 403
    wrong = client.post(retry, data={"csrf_token": "0" * 64}, follow_redirects=False)
    assert wrong.status_code == 403
    # A token is bound to its cookie: another browser's token does not work here.
    other = TestClient(create_app(seeded.rota), base_url="http://localhost")
    stolen = csrf(other)
    assert client.post(retry, data={"csrf_token": stolen}).status_code == 403
    assert seeded.rota.job(seeded.failed).state is JobState.FAILED


def test_token_protects_everything(seeded: Seeded) -> None:
    app = create_app(seeded.rota, token=TOKEN)
    anonymous = TestClient(app)
    for path in ("/", "/jobs", f"/jobs/{seeded.failed}", "/schedules", "/workers", "/metrics"):
        assert anonymous.get(path).status_code == 401, path
    assert anonymous.get("/static/dashboard.css").status_code == 401
    assert anonymous.post(f"/jobs/{seeded.failed}/retry").status_code == 401
    assert anonymous.get("/", headers={"authorization": "Bearer nope"}).status_code == 401
    browser = anonymous.get("/jobs", headers={"accept": "text/html"})
    assert browser.status_code == 401 and 'action="/login"' in browser.text

    bearer = TestClient(app, headers={"authorization": f"Bearer {TOKEN}"})
    assert bearer.get("/").status_code == 200
    assert bearer.get("/metrics").status_code == 200

    person = TestClient(app)
    form = person.get("/login")
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form.text)
    assert form.status_code == 200 and token
    denied = person.post("/login", data={"csrf_token": token.group(1), "token": "guess"})
    assert denied.status_code == 401
    login = person.post(
        "/login",
        data={"csrf_token": token.group(1), "token": TOKEN, "next": "/workers"},
        follow_redirects=False,
    )
    assert login.status_code == 303 and login.headers["location"] == "/workers"
    cookie = login.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and TOKEN not in cookie
    assert person.get("/workers").status_code == 200
    assert person.get("/static/dashboard.css").status_code == 200


def test_mounted_under_a_prefix(seeded: Seeded) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    host = Starlette(routes=[Mount("/admin/rota", create_app(seeded.rota))])
    client = TestClient(host, base_url="http://localhost")
    page = client.get(f"/admin/rota/jobs/{seeded.failed}")
    assert page.status_code == 200
    assert 'href="/admin/rota/static/dashboard.css"' in page.text
    assert 'action="/admin/rota/jobs/' in page.text
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', page.text)
    assert token
    retried = client.post(
        f"/admin/rota/jobs/{seeded.failed}/retry",
        data={"csrf_token": token.group(1)},
        follow_redirects=False,
    )
    assert retried.status_code == 303
    assert retried.headers["location"] == f"/admin/rota/jobs/{seeded.failed}"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_cli_refuses_a_public_bind_without_token(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROTA_DASHBOARD_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["dashboard", "tests.dashboard.demo_app:app", "--host", host])
    assert result.exit_code == 2
    assert "without a token" in result.output


def test_cli_allows_loopback_and_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from rota.dashboard.hosts import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))
    served: list[tuple[str, int]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **_: served.append((host, port)))
    monkeypatch.setenv("ROTA_DASHBOARD_TOKEN", TOKEN)
    result = CliRunner().invoke(main, ["dashboard", "tests.dashboard.demo_app:app", "--host", "::"])
    assert result.exit_code == 0, result.output
    assert "token required" in result.output
    assert served == [("::", 8678)]
