"""The example FastAPI service (``examples/fastapi_app``): its worker runs in the lifespan, its
routes queue and report jobs, rota's refusals are 4xx with their code, the dashboard at
``/rota`` needs the token, and its cron schedule is registered and fires.

Most tests go through Starlette's ``TestClient`` (httpx underneath; it runs the lifespan, so
the worker runs in the client's event loop) on a ``FakeClock``: a retry's back-off and the
quarter-hour tick pass when the test advances the clock.  One test serves ``main.py`` with
uvicorn in a process of its own, as its README says, and stops it with a signal.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from examples.fastapi_app import tasks
from examples.fastapi_app.api import create_app
from examples.fastapi_app.settings import Settings
from examples.fastapi_app.tasks import create_rota

from rota import JobState, Rota
from rota.testing import FakeClock
from tests.conftest import Database

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "example-dashboard-token-0123"
START = datetime(2026, 3, 2, 9, 0, 30, tzinfo=timezone.utc)
BEARER = {"Authorization": f"Bearer {TOKEN}"}
sqlite_only = pytest.mark.parametrize("db", ["sqlite"], indirect=True)


@dataclass
class Service:
    rota: Rota
    clock: FakeClock
    client: TestClient

    def sign_up(self, email: str, **fields: Any) -> int:
        response = self.client.post("/signups", json={"email": email, "name": "Ada", **fields})
        assert response.status_code == 202, response.text
        job_id: int = response.json()["job_id"]
        assert response.json()["status_url"] == f"/jobs/{job_id}"
        return job_id

    def status(self, job_id: int) -> dict[str, Any]:
        response = self.client.get(f"/jobs/{job_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def until(self, job_id: int, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The job's status once ``check`` accepts it; the worker has 10 s to get there."""
        deadline = time.monotonic() + 10
        while not check(body := self.status(job_id)):
            assert time.monotonic() < deadline, body
            time.sleep(0.02)
        return body


@pytest.fixture
def service(db: Database, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    """The app on the test's database and a fake clock, its lifespan entered; an empty outbox."""
    monkeypatch.setattr(tasks, "outbox", tasks.Outbox())
    clock = FakeClock(START)
    rota = create_rota(Settings(db.url, db.prefix, TOKEN), clock=clock, poll_interval=0.05)
    try:
        with TestClient(create_app(rota, dashboard_token=TOKEN)) as client:
            yield Service(rota, clock, client)
    finally:
        rota.store.dispose()


def state_is(state: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: body["state"] == state


def sent_to(email: str) -> list[tasks.Message]:
    return [message for message in tasks.outbox.sent if message.to == email]


def test_a_signup_is_mailed_by_the_worker_in_the_lifespan(service: Service) -> None:
    job_id = service.sign_up("ada@example.com")
    done = service.until(job_id, state_is("succeeded"))
    [message] = sent_to("ada@example.com")
    assert message.subject == "Welcome, Ada!"
    assert done["result"] == {"message_id": message.id, "attempt": 1}
    assert (done["task"], done["attempt"], done["errors"]) == ("send_welcome", 1, [])
    result = service.client.get(f"/jobs/{job_id}/result")
    assert result.status_code == 200
    assert result.json() == {"job_id": job_id, "result": done["result"]}


@sqlite_only
def test_a_mail_for_later_is_queued_once_and_waits_for_its_time(service: Service) -> None:
    later = (START + timedelta(hours=1)).isoformat()
    job_id = service.sign_up("bob@example.com", send_at=later)
    assert service.sign_up("bob@example.com", send_at=later) == job_id  # its unique key
    waiting = service.client.get(f"/jobs/{job_id}/result", params={"timeout": 0.2})
    assert waiting.status_code == 202
    assert (waiting.json()["state"], waiting.json()["run_at"]) == (
        "pending",
        "2026-03-02T10:00:30Z",
    )
    assert sent_to("bob@example.com") == []
    service.clock.advance(timedelta(hours=1))
    result = service.client.get(f"/jobs/{job_id}/result", params={"timeout": 10})
    assert result.status_code == 200, result.text
    assert [message.id for message in sent_to("bob@example.com")] == [
        result.json()["result"]["message_id"]
    ]


@sqlite_only
def test_an_unreachable_mail_provider_is_retried_after_its_back_off(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    send = tasks.outbox.send
    calls: list[str] = []

    def flaky(to: str, subject: str) -> str:
        calls.append(to)
        if len(calls) == 1:
            raise ConnectionError("mail provider unreachable")
        return send(to, subject)

    monkeypatch.setattr(tasks.outbox, "send", flaky)
    job_id = service.sign_up("cy@example.com")
    waiting = service.until(job_id, lambda body: bool(body["errors"]))
    assert (waiting["state"], waiting["attempt"]) == ("pending", 1)
    assert "mail provider unreachable" in waiting["errors"][0]["message"]
    service.clock.advance(5)  # retry_delay: the first back-off is at most that
    done = service.until(job_id, state_is("succeeded"))
    assert (done["attempt"], done["result"]["attempt"], len(calls)) == (2, 2, 2)


@sqlite_only
def test_a_mail_that_cannot_be_sent_fails_at_once_and_its_result_is_a_409(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(to: str, subject: str) -> str:
        raise PermissionError(f"relay denied for {to}")

    monkeypatch.setattr(tasks.outbox, "send", refused)
    job_id = service.sign_up("dee@example.com")
    result = service.client.get(f"/jobs/{job_id}/result", params={"timeout": 10})
    assert result.status_code == 409, result.text
    assert result.json()["code"] == "JOB_FAILED"
    assert "relay denied for dee@example.com" in result.json()["error"]["message"]
    failed = service.status(job_id)
    assert (failed["state"], failed["attempt"], len(failed["errors"])) == ("failed", 1, 1)


@sqlite_only
def test_rotas_refusals_are_4xx_with_their_code_and_write_nothing(service: Service) -> None:
    too_early = service.client.post(
        "/signups", json={"email": "eve@example.com", "name": "Eve", "send_at": "0999-01-01T00:00"}
    )
    assert too_early.status_code == 422
    assert too_early.json()["code"] == "INVALID_ARGUMENTS"
    assert "outside the years 1000 to 9999" in too_early.json()["detail"]
    assert service.rota.counts().by_task == {}
    missing = service.client.get("/jobs/424242")
    assert missing.status_code == 404
    assert missing.json() == {"code": "JOB_NOT_FOUND", "detail": "job 424242 does not exist"}
    # FastAPI's own validation comes first, in its own shape.
    not_an_email = service.client.post("/signups", json={"email": "eve", "name": "Eve"})
    assert not_an_email.status_code == 422 and "code" not in not_an_email.json()


@sqlite_only
def test_the_dashboard_at_rota_needs_the_token_and_shows_the_jobs(service: Service) -> None:
    job_id = service.sign_up("fay@example.com")
    service.until(job_id, state_is("succeeded"))
    page = f"/rota/jobs/{job_id}"
    refused = service.client.get(page)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="rota"'
    assert "send_welcome" not in refused.text
    login = service.client.get(page, headers={"Accept": "text/html"})
    assert login.status_code == 401 and 'name="token"' in login.text
    wrong = service.client.get(page, headers={"Authorization": "Bearer not-the-token-at-all"})
    assert wrong.status_code == 401
    with_token = service.client.get(page, headers=BEARER)
    assert with_token.status_code == 200
    assert "send_welcome" in with_token.text and "fay@example.com" in with_token.text

    form = service.client.get("/rota/login")
    csrf = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form.text)
    assert csrf, form.text
    fields = {"csrf_token": csrf.group(1), "token": TOKEN, "next": page}
    logged_in = service.client.post("/rota/login", data=fields, follow_redirects=False)
    assert (logged_in.status_code, logged_in.headers["location"]) == (303, page)
    assert "send_welcome" in service.client.get(page).text  # the session cookie opens it


@sqlite_only
def test_the_cron_schedule_is_registered_and_fires_at_its_tick(service: Service) -> None:
    schedule = service.rota.get_schedule("prune_outbox")
    assert (schedule.spec.cron, schedule.spec.tz) == ("*/15 * * * *", "UTC")
    assert schedule.next_run_at == START.replace(minute=15, second=0)
    listed = service.client.get("/rota/schedules", headers=BEARER)
    assert "prune_outbox" in listed.text and "*/15 * * * *" in listed.text
    service.clock.set(schedule.next_run_at)
    deadline = time.monotonic() + 10
    while not (ticks := service.rota.store.reads.jobs([JobState.SUCCEEDED], task="prune_outbox")):
        assert time.monotonic() < deadline, service.rota.jobs()
        time.sleep(0.02)
    [tick] = ticks
    assert (tick.scheduled_at, tick.result) == (schedule.next_run_at, {"pruned": 0})
    assert service.rota.get_schedule("prune_outbox").next_run_at == START.replace(
        minute=30, second=0
    )


def serve(db: Database, sock: socket.socket) -> subprocess.Popen[str]:
    """``uvicorn examples.fastapi_app.main:app``, as the README runs it, on ``sock``."""
    env = {
        **os.environ,
        "ROTA_DATABASE_URL": db.url,
        "ROTA_TABLE_PREFIX": db.prefix,
        "ROTA_DASHBOARD_TOKEN": TOKEN,
    }
    command = [sys.executable, "-m", "uvicorn", "examples.fastapi_app.main:app"]
    return subprocess.Popen(
        [*command, "--fd", str(sock.fileno())],
        cwd=ROOT,
        env=env,
        pass_fds=[sock.fileno()],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def answering(client: httpx.Client, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            if client.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert server.poll() is None and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("db", "stop", "code"),
    [
        pytest.param("sqlite", signal.SIGINT, 0, id="sqlite-SIGINT"),
        # uvicorn shuts down the same way, then raises SIGTERM again on itself: a process
        # supervisor sees the death by the signal it sent.
        pytest.param("sqlite", signal.SIGTERM, -signal.SIGTERM, id="sqlite-SIGTERM"),
        pytest.param("mariadb", signal.SIGINT, 0, id="mariadb-SIGINT"),
        pytest.param("postgres", signal.SIGINT, 0, id="postgres-SIGINT"),
    ],
    indirect=["db"],
)
def test_the_app_under_uvicorn_runs_jobs_and_stops_its_worker_on_a_signal(
    db: Database, stop: signal.Signals, code: int
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        server = serve(db, sock)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            with httpx.Client(base_url=base, timeout=5) as client:
                answering(client, server)
                queued = client.post("/signups", json={"email": "gil@example.com", "name": "Gil"})
                assert queued.status_code == 202, queued.text
                result = client.get(f"/jobs/{queued.json()['job_id']}/result")
                assert result.status_code == 200, result.text
                assert result.json()["result"]["attempt"] == 1
                assert client.get("/rota/", headers=BEARER).status_code == 200
                assert client.get("/rota/").status_code == 401
            server.send_signal(stop)
            output = server.communicate(timeout=15)[0]
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
    assert server.returncode == code, output
    started = output.index("worker.started")
    assert output.index("job.succeeded") > started
    assert output.index("worker.stopped") < output.index("Application shutdown complete"), output
