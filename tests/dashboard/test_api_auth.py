"""Who may call the HTTP API: Bearer tokens only (never the dashboard's session cookie), a
``read`` token only reads, wrong tokens are throttled; the Host and Origin guards apply; every
refusal is JSON; and the token settings (``api_tokens``, ``rota dashboard``'s variables)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.dashboard import create_app
from rota.dashboard.api import TABLE, scoped_tokens
from rota.dashboard.api.auth import Access
from rota.errors import ConfigError
from tests.dashboard.api_client import (
    OPERATE,
    READ,
    TOKEN,
    TestClient,
    api_client,
    bearer,
    error_of,
)

pytestmark = pytest.mark.sqlite_only

METRICS = "metrics-token-0123456789"
OPERATE_ROUTES = [(method, path) for method, path, access, _ in TABLE if access is Access.OPERATE]
READ_ROUTES = [(method, path) for method, path, access, _ in TABLE if access is Access.READ]


@pytest.fixture
def job(rota: Rota) -> int:
    @rota.task(cron="0 * * * *")
    def tick(ctx: JobContext) -> None: ...

    rota.drain()
    return rota.queue("tick")


def concrete(path: str, job_id: int) -> str:
    return "/api" + path.replace("{job_id}", str(job_id)).replace("{name:path}", "tick")


def refused(response: Any) -> None:
    error_of(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"] == 'Bearer realm="rota"'
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(("method", "path"), [*READ_ROUTES, *OPERATE_ROUTES])
def test_every_route_needs_a_token(rota: Rota, job: int, method: str, path: str) -> None:
    client = api_client(rota)
    url = concrete(path, job)
    for headers in (
        {"Authorization": ""},
        bearer("wrong-token-0123456789"),
        {"Authorization": f"Basic {OPERATE}"},
        bearer(METRICS),
    ):
        refused(client.request(method, url, headers=headers))
    assert rota.job(job).state.value == "pending"


@pytest.mark.parametrize(("method", "path"), OPERATE_ROUTES)
def test_a_read_token_cannot_change_anything(rota: Rota, job: int, method: str, path: str) -> None:
    before = (rota.job(job), rota.get_schedule("tick"), rota.paused_queues())
    body = {"task": "tick"} if path == "/jobs" else {"cron": "5 * * * *"}
    response = api_client(rota, READ).request(method, concrete(path, job), json=body)
    assert "operate" in error_of(response, 403, "FORBIDDEN")
    assert (rota.job(job), rota.get_schedule("tick"), rota.paused_queues()) == before
    assert rota.counts().total == 2  # the tick drained, and the job


def test_each_token_opens_what_its_scope_allows(rota: Rota, job: int) -> None:
    for token in (READ, OPERATE, TOKEN):
        client = api_client(rota, token)
        for method, path in READ_ROUTES:
            response = client.request(method, concrete(path, job))
            assert response.status_code == 200, (token, path, response.text)
    assert api_client(rota, OPERATE).post(f"/api/jobs/{job}/pause").json()["changed"] is True
    assert api_client(rota, TOKEN).post(f"/api/jobs/{job}/resume").json()["changed"] is True


def test_api_tokens_open_the_api_only(rota: Rota) -> None:
    client = api_client(rota, READ, metrics_token=METRICS)
    for path in ("/", "/jobs", "/schedules"):
        assert client.get(path).status_code == 401, path
    assert client.get("/metrics").status_code == 401
    metrics = TestClient(client.app, base_url="http://localhost", headers=bearer(METRICS))
    assert metrics.get("/metrics").status_code == 200
    refused(metrics.get("/api/jobs"))


def test_a_session_cookie_does_not_open_the_api(rota: Rota) -> None:
    rota.jobs()  # the tables exist before the pages read them
    browser = TestClient(create_app(rota, token=TOKEN), base_url="http://localhost")
    form = browser.get("/login")
    csrf = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form.text)
    assert csrf is not None
    logged_in = browser.post(
        "/login", data={"csrf_token": csrf.group(1), "token": TOKEN}, follow_redirects=False
    )
    assert logged_in.status_code == 303 and browser.cookies.get("rota_session")
    assert browser.get("/jobs").status_code == 200  # the session opens the pages
    refused(browser.get("/api/jobs"))
    refused(browser.post("/api/queues/default/pause"))
    assert rota.paused_queues() == []


def test_without_any_token_the_api_is_closed(rota: Rota) -> None:
    """A dashboard without a token is open on loopback; its API is not."""
    rota.jobs()
    open_dashboard = TestClient(create_app(rota), base_url="http://localhost")
    assert open_dashboard.get("/jobs").status_code == 200
    refused(open_dashboard.get("/api/jobs"))
    only_api = api_client(rota, READ, token=None, api_tokens={READ: "read"})
    assert only_api.get("/api/jobs").status_code == 200


def test_wrong_tokens_are_throttled(rota: Rota) -> None:
    client = api_client(rota)
    for _ in range(5):
        refused(client.get("/api/jobs", headers=bearer("guess-token-0123456789")))
    throttled = client.get("/api/jobs")  # even the right token, for a while
    error_of(throttled, 429, "TOO_MANY_REQUESTS")
    assert int(throttled.headers["retry-after"]) > 0


def test_host_and_origin_guards_answer_json(rota: Rota) -> None:
    client = api_client(rota, allowed_hosts=["jobs.example.com"])
    elsewhere = TestClient(client.app, base_url="http://evil.example", headers=bearer(OPERATE))
    error_of(elsewhere.get("/api/jobs"), 400, "BAD_REQUEST")
    cross = client.post("/api/queues/default/pause", headers={"origin": "https://evil.example"})
    error_of(cross, 403, "FORBIDDEN")
    assert rota.paused_queues() == []
    same = client.post("/api/queues/default/pause", headers={"origin": "http://localhost"})
    assert same.status_code == 200


def test_unknown_routes_and_methods_are_json(rota: Rota) -> None:
    client = api_client(rota)
    error_of(client.get("/api/nowhere"), 404, "NOT_FOUND")
    error_of(client.get("/api/jobs/1/%0A"), 404, "NOT_FOUND")
    error_of(client.delete("/api/jobs"), 405, "METHOD_NOT_ALLOWED")
    refused(client.get("/api/nowhere", headers={"Authorization": ""}))


def test_the_openapi_document_describes_every_route(rota: Rota) -> None:
    client = api_client(rota, None, token=None, api_tokens=None)  # no token needed to read it
    served = client.get("/api/openapi.json")
    assert served.status_code == 200
    document = served.json()
    assert document["openapi"].startswith("3.") and document["servers"] == [{"url": "/api"}]
    described = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if path != "/openapi.json"
    }
    assert described == {(method, path.replace(":path", "")) for method, path, _, _ in TABLE}
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
    }
    for method, path, access, _ in TABLE:
        operation = document["paths"][path.replace(":path", "")][method.lower()]
        assert f"Scope: `{access.value}`" in operation["description"]
        assert ("403" in operation["responses"]) is (access is Access.OPERATE)
    mounted = TestClient(
        create_app(rota, token=TOKEN), base_url="http://localhost", root_path="/ops"
    )
    assert mounted.get("/ops/api/openapi.json").json()["servers"] == [{"url": "/ops/api"}]


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ({"short": "read"}, "at least 16"),
        ({"a-long-enough-token-123": "admin"}, "'read' or 'operate'"),
        ({TOKEN: "read"}, "must differ"),
        ({METRICS: "operate"}, "must differ"),
        ({" spaced-token-0123456789": "read"}, "printable ASCII"),
        (["a-long-enough-token-123"], "must map tokens to scopes"),
    ],
)
def test_bad_api_tokens_are_config_errors(rota: Rota, tokens: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        create_app(rota, token=TOKEN, metrics_token=METRICS, api_tokens=tokens)
    assert "0123456789" not in str(raised.value)  # never the token itself


def test_scoped_tokens_from_variables() -> None:
    assert scoped_tokens({Access.READ: "r1-token, r2-token\n", Access.OPERATE: None}) == {
        "r1-token": "read",
        "r2-token": "read",
    }
    with pytest.raises(ConfigError, match="both the read and the operate"):
        scoped_tokens({Access.READ: "same", Access.OPERATE: "same"})


def test_cli_takes_api_tokens_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: served.append(app))
    monkeypatch.setenv("ROTA_DASHBOARD_TOKEN", TOKEN)
    monkeypatch.setenv("ROTA_API_TOKENS_READ", READ)
    monkeypatch.setenv("ROTA_API_TOKENS_OPERATE", f"{OPERATE},other-operate-token-0123")
    result = CliRunner().invoke(main, ["dashboard", "tests.dashboard.demo_app:app"])
    assert result.exit_code == 0, result.output
    # The openapi document needs no database; a read token on an operate route is refused
    # before any is touched.
    client = TestClient(served[0], base_url="http://localhost")
    forbidden = client.post("/api/queues/q/pause", headers=bearer(READ))
    error_of(forbidden, 403, "FORBIDDEN")
    refused(client.post("/api/queues/q/pause", headers=bearer("not-listed-token-0123")))
    monkeypatch.setenv("ROTA_API_TOKENS_READ", "short")
    bad = CliRunner().invoke(main, ["dashboard", "tests.dashboard.demo_app:app"])
    assert bad.exit_code == 2 and "at least 16" in bad.output
