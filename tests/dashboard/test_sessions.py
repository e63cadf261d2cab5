"""Dashboard logins: sessions minted per login, expiring and revoked by logout; CSRF tokens
bound to the session; the login throttle; the token rules of create_app and ``rota dashboard``;
and ``Cache-Control: no-store`` on every answer."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import JobState
from rota.dashboard import create_app
from rota.errors import ConfigError
from rota.testing import FakeClock
from tests.conftest import Database

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

TOKEN = "correct-horse-battery-staple"
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')
APP = "tests.dashboard.demo_app:app"
CSS = "/static/dashboard.css"


@pytest.fixture
def db(tmp_path: Path) -> Database:
    """SQLite alone: sessions, CSRF and the throttle live in the dashboard, not the database."""
    return Database("sqlite", f"sqlite:///{tmp_path}/rota.db", "t_")


@pytest.fixture
def rota(make_rota: Callable[..., Rota]) -> Rota:
    """A Rota with one failed job, for pages and an action to act on."""
    rota = make_rota()

    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("boom")

    rota.queue(boom)
    rota.drain()
    return rota


def failed_job(rota: Rota) -> int:
    return rota.store.reads.jobs(task="boom")[0].id


def csrf_of(response: httpx.Response) -> str:
    found = CSRF.search(response.text)
    assert found, response.text
    return found.group(1)


def login(client: TestClient, token: str = TOKEN) -> httpx.Response:
    """Fill in and send the login form, as a browser would."""
    form = client.get("/login")
    assert form.status_code == 200
    fields = {"csrf_token": csrf_of(form), "token": token}
    response: httpx.Response = client.post("/login", data=fields, follow_redirects=False)
    return response


def session_of(response: httpx.Response) -> str:
    value = response.cookies.get("rota_session")
    assert value, response.headers
    return value


def logged_in(app: Any) -> tuple[TestClient, str]:
    """A client with a session, and that session's cookie value."""
    client = TestClient(app)
    response = login(client)
    assert response.status_code == 303, response.text
    return client, session_of(response)


def with_cookie(app: Any, value: str) -> TestClient:
    return TestClient(app, cookies={"rota_session": value})


def test_a_session_is_minted_per_login_and_never_holds_the_token(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    first, one = logged_in(app)
    second, two = logged_in(app)
    assert one != two and TOKEN not in one
    assert first.get("/").status_code == 200 and second.get("/").status_code == 200
    cookie = login(TestClient(app)).headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "max-age=43200" in cookie
    # Logging in again in the same browser ends the session it had.
    again = login(first)
    assert session_of(again) != one
    assert with_cookie(app, one).get("/").status_code == 401
    assert first.get("/").status_code == 200


def test_a_cookie_replayed_after_logout_is_refused(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    browser, value = logged_in(app)
    copy = with_cookie(app, value)
    assert copy.get("/").status_code == 200
    out = browser.post(
        "/logout", data={"csrf_token": csrf_of(browser.get("/"))}, follow_redirects=False
    )
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert browser.get("/").status_code == 401
    assert copy.get("/").status_code == 401
    assert copy.get("/metrics").status_code == 401
    # A new login works, with a new session.
    assert session_of(login(browser)) != value
    assert browser.get("/").status_code == 200


def test_a_session_expires_at_its_max_age(rota: Rota, clock: FakeClock) -> None:
    app = create_app(rota, token=TOKEN, session_max_age=timedelta(minutes=30))
    browser, value = logged_in(app)
    clock.advance(timedelta(minutes=30) - timedelta(seconds=1))
    assert browser.get("/").status_code == 200
    clock.advance(timedelta(seconds=2))
    assert browser.get("/").status_code == 401
    assert with_cookie(app, value).get("/").status_code == 401
    assert browser.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_sessions_are_signed_with_the_token(rota: Rota) -> None:
    _, value = logged_in(create_app(rota, token=TOKEN))
    # Another process with the same token (or this one restarted) takes it...
    assert with_cookie(create_app(rota, token=TOKEN), value).get("/").status_code == 200
    # ...one with another token does not, nor does anything tampered with.
    other = create_app(rota, token=TOKEN + "-rotated")
    assert with_cookie(other, value).get("/").status_code == 401
    nonce, stamp, signature = value.split(".")
    app = create_app(rota, token=TOKEN)
    for forged in (f"x{nonce}.{stamp}.{signature}", f"{nonce}.{stamp}.{signature[:-2]}", "", "a.b"):
        assert with_cookie(app, forged).get("/").status_code == 401, forged


def test_a_csrf_token_from_another_session_is_refused(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    retry = f"/jobs/{failed_job(rota)}/retry"
    mine, _ = logged_in(app)
    theirs, _ = logged_in(app)
    their_token = csrf_of(theirs.get("/"))
    assert mine.post(retry, data={"csrf_token": their_token}).status_code == 403
    # Not even with their CSRF cookie planted in this browser (as a sibling subdomain could).
    mine.cookies.set("rota_csrf", theirs.cookies["rota_csrf"], domain="testserver.local")
    assert mine.post(retry, data={"csrf_token": their_token}).status_code == 403
    # Nor does the token of the login form this browser had before it logged in.
    anonymous = TestClient(app)
    before = csrf_of(anonymous.get("/login"))
    anonymous.post("/login", data={"csrf_token": before, "token": TOKEN})
    assert anonymous.post(retry, data={"csrf_token": before}).status_code == 403
    assert rota.job(failed_job(rota)).state is JobState.FAILED
    # The session's own CSRF cookie was put back, so the next page's token works.
    assert mine.cookies["rota_csrf"] != theirs.cookies["rota_csrf"]
    own = csrf_of(mine.get("/"))
    done = mine.post(retry, data={"csrf_token": own}, follow_redirects=False)
    assert done.status_code == 303
    assert rota.job(failed_job(rota)).state is JobState.PENDING


def test_failed_logins_are_throttled_per_client(rota: Rota, clock: FakeClock) -> None:
    app = create_app(rota, token=TOKEN)
    attacker = TestClient(app, client=("203.0.113.7", 40000))
    for _ in range(5):
        assert login(attacker, "wrong-token-guess-0000").status_code == 401
    refused = login(attacker)  # the right token, sixth attempt
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "60"
    assert "try again in 60 seconds" in refused.text
    assert "rota_session" not in refused.cookies
    # Bearer guesses are the same attempts: no way around the throttle.
    bearer = attacker.get("/", headers={"authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 429 and bearer.headers["retry-after"] == "60"
    # Another client is not affected.
    assert login(TestClient(app, client=("198.51.100.1", 40000))).status_code == 303
    clock.advance(59)
    assert login(attacker).status_code == 429
    clock.advance(1)
    assert login(attacker).status_code == 303


def test_a_success_resets_the_count_and_bearer_guesses_count(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    client = TestClient(app)
    for _ in range(4):
        assert login(client, "wrong-token-guess-0000").status_code == 401
    assert login(client).status_code == 303
    for _ in range(4):
        assert login(client, "wrong-token-guess-0000").status_code == 401
    assert login(client).status_code == 303
    scraper = TestClient(app, client=("192.0.2.9", 9100))
    for _ in range(5):
        wrong = scraper.get("/metrics", headers={"authorization": "Bearer wrong-wrong-wrong"})
        assert wrong.status_code == 401
    right = scraper.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert right.status_code == 429 and right.text.startswith("429 Too Many Requests")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"token": ""}, "token is empty"),
        (
            {"token": "fifteen-chars.."},
            "token has 15 characters; a dashboard token needs at least 16",
        ),
        ({"token": " " + TOKEN}, "printable ASCII"),
        ({"token": TOKEN + "\n"}, "printable ASCII"),
        ({"token": TOKEN, "metrics_token": ""}, "metrics_token is empty"),
        ({"token": TOKEN, "metrics_token": "short"}, "metrics_token has 5 characters"),
        ({"token": TOKEN, "metrics_token": TOKEN}, "metrics_token must differ"),
        ({"metrics_token": "metrics-token-0123456"}, "metrics_token needs a token"),
        ({"token": TOKEN, "session_max_age": 0}, "session_max_age must be"),
    ],
)
def test_create_app_refuses_weak_tokens(rota: Rota, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        create_app(rota, **options)


def test_no_token_is_the_only_way_to_have_no_login(rota: Rota) -> None:
    client = TestClient(create_app(rota, token=None), base_url="http://localhost")
    assert client.get("/").status_code == 200
    assert TestClient(create_app(rota), base_url="http://localhost").get("/").status_code == 200


def serve(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make ``rota dashboard`` hand its app over instead of serving it."""
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: served.append(app))
    monkeypatch.delenv("ROTA_DASHBOARD_TOKEN", raising=False)
    monkeypatch.delenv("ROTA_METRICS_TOKEN", raising=False)
    return served


@pytest.mark.parametrize(
    ("arguments", "env", "message"),
    [
        (["--token", "short"], {}, "--token has 5 characters"),
        (["--token", ""], {}, "--token is empty"),
        ([], {"ROTA_DASHBOARD_TOKEN": ""}, "$ROTA_DASHBOARD_TOKEN is empty"),
        ([], {"ROTA_DASHBOARD_TOKEN": "tiny"}, "$ROTA_DASHBOARD_TOKEN has 4 characters"),
        ([], {"ROTA_DASHBOARD_TOKEN": TOKEN, "ROTA_METRICS_TOKEN": "x"}, "METRICS_TOKEN has 1"),
        (["--token", TOKEN, "--token-file", "{empty}"], {}, "not both"),
        (["--token-file", "{empty}"], {}, "is empty"),
        (["--metrics-token-file", "{good}"], {}, "metrics_token needs a token"),
    ],
)
def test_cli_refuses_weak_tokens(
    arguments: list[str],
    env: dict[str, str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served = serve(monkeypatch)
    files = {"empty": tmp_path / "empty", "good": tmp_path / "good"}
    files["empty"].write_text("\n")
    files["good"].write_text("metrics-token-0123456789\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = [a.format_map({k: str(v) for k, v in files.items()}) for a in arguments]
    result = CliRunner().invoke(main, ["dashboard", APP, *argv])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert served == []


def test_cli_reads_tokens_from_files_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = serve(monkeypatch)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    metrics_file = tmp_path / "metrics"
    metrics_file.write_text("metrics-token-0123456789\n")
    argv = ["dashboard", APP, "--host", "0.0.0.0", "--token-file", str(token_file)]
    result = CliRunner().invoke(main, [*argv, "--metrics-token-file", str(metrics_file)])
    assert result.exit_code == 0, result.output
    assert "token required" in result.stdout and "warning" not in result.stderr
    # demo_app's database is never created: the stylesheet is a page that needs no database.
    client = TestClient(served[0])
    assert client.get(CSS).status_code == 401
    assert client.get(CSS, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    metrics = {"authorization": "Bearer metrics-token-0123456789"}
    assert client.get(CSS, headers=metrics).status_code == 401
    assert client.get("/metrics", headers=metrics).status_code != 401  # 503: no database

    monkeypatch.setenv("ROTA_DASHBOARD_TOKEN", TOKEN)
    monkeypatch.setenv("ROTA_METRICS_TOKEN", "metrics-token-from-env")
    assert CliRunner().invoke(main, ["dashboard", APP, "--host", "::"]).exit_code == 0
    from_env = TestClient(served[1])
    assert from_env.get(CSS, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    scraper = {"authorization": "Bearer metrics-token-from-env"}
    assert from_env.get(CSS, headers=scraper).status_code == 401


def test_cli_token_on_argv_works_but_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    served = serve(monkeypatch)
    result = CliRunner().invoke(main, ["dashboard", APP, "--token", TOKEN])
    assert result.exit_code == 0, result.output
    assert "--token is visible to every user of this machine" in result.stderr
    assert "warning" not in result.stdout
    client = TestClient(served[0])
    assert client.get(CSS, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_every_response_is_no_store(rota: Rota, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(rota, token=TOKEN, metrics_token="metrics-token-0123456789")
    job = failed_job(rota)
    seen: list[httpx.Response] = []

    def client(**options: Any) -> TestClient:
        """A client that keeps every response it gets, redirects' included."""
        made = TestClient(app, **options)
        made.event_hooks = {"response": [seen.append]}
        return made

    anonymous = client(client=("192.0.2.1", 1))
    anonymous.get("/")
    anonymous.get("/jobs", headers={"accept": "text/html"})
    anonymous.get("/metrics", headers={"authorization": "Bearer metrics-token-0123456789"})
    anonymous.get("/", headers={"authorization": "Bearer metrics-token-0123456789"})
    for _ in range(6):
        login(anonymous, "wrong-token-guess-0000")

    browser = client()
    login(browser)
    token = csrf_of(browser.get(f"/jobs/{job}"))
    for path in ("/", "/jobs", "/schedules", "/workers", "/metrics", "/static/dashboard.css"):
        browser.get(path)
    browser.get("/jobs?page=abc")  # 400
    browser.get("/jobs/999999")  # 404
    browser.get(f"/jobs/{job}/retry")  # 405
    browser.post(f"/jobs/{job}/retry", data={"csrf_token": "0" * 64})  # 403
    browser.post(f"/jobs/{job}/retry", data={"csrf_token": token}, follow_redirects=False)  # 303
    browser.post(f"/jobs/{job}/retry", data={"csrf_token": token})  # 409
    browser.post("/logout", data={"csrf_token": token}, follow_redirects=False)

    broken = client(raise_server_exceptions=False)
    monkeypatch.setattr(rota, "counts", lambda: 1 / 0)
    broken.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})  # 500

    statuses = {response.status_code for response in seen}
    assert statuses >= {200, 303, 400, 401, 403, 404, 405, 409, 429, 500}, statuses
    for response in seen:
        where = (response.request.method, str(response.request.url), response.status_code)
        assert response.headers.get("cache-control") == "no-store", where


def test_ipv6_clients_are_throttled_by_their_64(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    for n in range(5):
        guesser = TestClient(app, client=(f"2001:db8:1:2::{n + 1}", 40000))
        assert login(guesser, "wrong-token-guess-0000").status_code == 401
    assert login(TestClient(app, client=("2001:db8:1:2:ffff::9", 1))).status_code == 429
    assert login(TestClient(app, client=("2001:db8:1:3::1", 1))).status_code == 303
