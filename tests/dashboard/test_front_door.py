"""The dashboard's front door, against a real uvicorn with requests written byte for byte: no
``Host`` value opens a page or applies an action without the token, whatever path it makes
``request.url`` show; without a token only loopback host names (and ``allowed_hosts``) are
answered, against DNS rebinding; a POST from another ``Origin`` is refused.

Every route of the app is tried (``DashboardApp.routes``: a route added later is tried too),
each POST with a CSRF token and cookie that really pair (the login form gives them to anyone,
as does any page of a dashboard without a token), and after each request the database must be
as it was.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.routing import Mount, Route

from rota import ConfigError, JobContext, Rota
from rota.cli import main
from rota.dashboard import create_app
from tests.dashboard.serving import Answer, exchange, serving

pytestmark = pytest.mark.sqlite_only

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

TOKEN = "front-door-token-0123456789"
SECRET = "secret-argument-7f3a"
CSS = "/static/dashboard.css"
CSRF = re.compile(rb'name="csrf_token" value="([0-9a-f]+)"')
HOSTILE_HOSTS = [
    b"x/login?",
    b"x/metrics?",
    b"evil.example/login#",
    b"localhost/login?",
    b"127.0.0.1:80/login?",
    b"[::1]/login?",
    b"@evil",
    b"localhost@evil.example",
    b"evil.example",
    b"",
    b"x" * 8000,
    b"evil example/login?",
    b"evil.example\rlogin",
    b"localhost:99999",
]


@dataclass
class Target:
    method: str
    path: str


@dataclass
class Seeded:
    rota: Rota
    job: int
    schedule: str


@pytest.fixture
def seeded(rota: Rota) -> Seeded:
    """A pending job whose argument is a secret, an active schedule, the default queue running:
    each action of the dashboard would change one of them."""

    @rota.task
    def send(ctx: JobContext, note: str) -> None: ...

    rota.schedule("0 3 * * *", send, name="nightly", args=(SECRET,))
    return Seeded(rota, rota.queue(send, SECRET), "nightly")


def targets(app: Any, seeded: Seeded) -> Iterator[Target]:
    """A request for every route of ``app``, by each method it answers (HEAD aside)."""
    for route in app.routes:
        if isinstance(route, Mount):
            yield Target("GET", f"{route.path}/dashboard.css")
            continue
        assert isinstance(route, Route), route
        path = route.path_format.format(job_id=seeded.job, name=seeded.schedule)
        if path == "/preview":
            path += "?cron=0+3+*+*+*&tz=UTC"
        for method in sorted(route.methods or ()):
            if method != "HEAD":
                yield Target(method, path)


def state(rota: Rota) -> tuple[object, ...]:
    """What an action could change: jobs, schedules, paused queues."""
    store = rota.store
    return (store.reads.jobs(limit=None), store.schedules.all(), store.cluster.paused_queues())


def form_pair(base: str, page: str) -> tuple[bytes, bytes]:
    """A CSRF cookie and the token that pairs with it, as ``page`` (the login form, or any page
    of a dashboard without a token) hands them out to a loopback host."""
    answer = exchange(base, "GET", page, [("Host", authority(base))])
    found = CSRF.search(answer.body)
    assert answer.status == 200 and found, answer
    cookie = answer.headers["set-cookie"].split(";")[0].encode()
    return cookie, found.group(1)


def authority(base: str) -> bytes:
    """``127.0.0.1:port``: the ``Host`` a browser sends to the server at ``base``."""
    return base.split("//")[1].encode()


def send(
    base: str, target: Target, host: bytes, pair: tuple[bytes, bytes], *extra: tuple[str, bytes]
) -> Answer:
    cookie, csrf = pair
    headers = [("Host", host), ("Cookie", cookie), ("Accept", b"text/html"), *extra]
    if target.method == "GET":
        return exchange(base, "GET", target.path, headers)
    body = b"csrf_token=" + csrf + b"&queue=default&cron=5+4+*+*+*&tz=UTC&version=1&next=/"
    form = ("Content-Type", b"application/x-www-form-urlencoded")
    return exchange(base, "POST", target.path, [*headers, form], body)


def refusals(seeded: Seeded, hosts: list[bytes], statuses: set[int], **options: Any) -> list[str]:
    """Each route of the dashboard ``create_app(seeded.rota, **options)`` makes, served by
    uvicorn, asked with each of ``hosts``: the answers whose status is not among ``statuses``
    or that show the secret (with a token, ``/login`` may also show its form or refuse a wrong
    token, which is no leak).  The test fails at once if a request changed the database."""
    app = create_app(seeded.rota, **options)
    token = options.get("token") is not None
    before = state(seeded.rota)
    wrong: list[str] = []
    with serving(app, probe="/login" if token else "/") as base:
        pair = form_pair(base, "/login" if token else "/")
        for target in targets(app, seeded):
            allowed = statuses | ({200, 429} if token and target.path == "/login" else set())
            for host in hosts:
                answer = send(base, target, host, pair)
                where = f"{target.method} {target.path} Host: {host[:40]!r}"
                if answer.status not in allowed or SECRET.encode() in answer.body:
                    wrong.append(f"{where}: {answer.status} {answer.body[:80]!r}")
                if state(seeded.rota) != before:
                    pytest.fail(f"{where} changed the database ({answer.status})")
    return wrong


def test_no_host_header_opens_a_page_or_an_action_without_the_token(seeded: Seeded) -> None:
    assert refusals(seeded, HOSTILE_HOSTS, {400, 401, 403}, token=TOKEN) == []


def test_without_a_token_only_loopback_host_names_are_answered(seeded: Seeded) -> None:
    """DNS rebinding: a page whose name now resolves to 127.0.0.1 reads nothing, and its forms
    (with a CSRF pair it read, had it been answered) change nothing."""
    rebound = [b"rebind.attacker.example:8678", b"rebind.attacker.example", b"localhost.evil"]
    hosts = [*rebound, b"127.0.0.1.evil.example", b"0.0.0.0:8678", b"10.0.0.5", *HOSTILE_HOSTS]
    assert refusals(seeded, hosts, {400}) == []
    assert refusals(seeded, [b"jobs.example.com"], {400}, token=TOKEN, allowed_hosts=[]) == []


def test_loopback_names_and_allowed_hosts_are_answered(seeded: Seeded) -> None:
    app = create_app(seeded.rota, allowed_hosts=["jobs.example.com", ".corp.example"])
    with serving(app) as base:
        port = base.rsplit(":", 1)[1]
        loopback = ["localhost", f"localhost:{port}", "LocalHost.", f"127.0.0.1:{port}"]
        allowed = ["127.8.0.1", f"[::1]:{port}", "[::1]", "jobs.example.com", "corp.example"]
        for host in [*loopback, *allowed, f"a.b.corp.example:{port}"]:
            answer = exchange(base, "GET", f"/jobs/{seeded.job}", [("Host", host.encode())])
            assert answer.status == 200 and SECRET.encode() in answer.body, host
        for host in ["jobs.example.com.evil", "evilcorp.example", "example.com", "[::2]"]:
            answer = exchange(base, "GET", "/", [("Host", host.encode())])
            assert answer.status == 400, host
            assert b"does not answer to the host name" in answer.body, host
            assert b"--allowed-host NAME" in answer.body and b"allowed_hosts" in answer.body
        # HTTP/1.0 without Host: the request names the address it reached.
        assert exchange(base, "GET", "/", [], version="HTTP/1.0").status == 200


@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_form_posted_from_another_origin_is_refused(seeded: Seeded, token: str | None) -> None:
    """Whatever the token, a POST whose Origin is another site's, ``null``, or this host on
    another port or scheme changes nothing; the dashboard's own origin, or none, may post."""
    rota = seeded.rota
    app = create_app(rota, token=token)
    bearer = [("Authorization", f"Bearer {TOKEN}".encode())] if token else []
    with serving(app, probe="/login" if token else "/") as base:
        host, port = authority(base), int(base.rsplit(":", 1)[1])
        pair = form_pair(base, "/login" if token else "/")
        cancel = Target("POST", f"/jobs/{seeded.job}/cancel")
        before = state(rota)
        origins = [b"http://rebind.attacker.example:8678", b"null", b"http://evil.example"]
        origins += [f"http://127.0.0.1:{port + 1}".encode(), f"https://127.0.0.1:{port}".encode()]
        origins += [f"http://localhost:{port}".encode(), b"", b"http://[::1", b"127.0.0.1"]
        for origin in origins:
            answer = send(base, cancel, host, pair, ("Origin", origin), *bearer)
            assert answer.status == 403 and b"Origin" in answer.body, origin
            assert state(rota) == before, origin
        two = [("Origin", f"http://{host.decode()}".encode()), ("Origin", b"http://evil.example")]
        assert send(base, cancel, host, pair, *two, *bearer).status == 403
        assert state(rota) == before

        own = ("Origin", f"http://{host.decode()}".encode())
        assert send(base, cancel, host, pair, own, *bearer).status == 303
        assert rota.job(seeded.job).state.value == "cancelled"
        pause = Target("POST", "/queues/pause")
        assert send(base, pause, host, (pair[0], b"0" * 64), *bearer).status == 403
        assert rota.paused_queues() == []
        assert send(base, pause, host, pair, *bearer).status == 303  # no Origin: CSRF is enough
        assert rota.paused_queues() == ["default"]


def test_an_action_goes_back_only_inside_the_dashboard(seeded: Seeded) -> None:
    """A form's ``next`` and the ``Referer`` are user input: one that is no path inside the
    dashboard, or a Referer of another origin, sends the browser to the action's fallback."""
    with serving(create_app(seeded.rota)) as base:
        host, port = authority(base), int(base.rsplit(":", 1)[1])
        cookie, csrf = form_pair(base, "/")
        form = [("Cookie", cookie), ("Content-Type", b"application/x-www-form-urlencoded")]
        cases = [(b"next=//[x", b""), (b"", b"http://[::1"), (b"", b"http://evil.example/jobs")]
        cases += [(b"", f"http://127.0.0.1:{port + 1}/jobs".encode()), (b"next=/jobs", b"")]
        cases += [(b"", f"http://{host.decode()}/workers?x=1".encode())]
        for n, (field, referer) in enumerate(cases):
            action = "/queues/pause" if n % 2 == 0 else "/queues/resume"
            headers = [("Host", host), *form, *([("Referer", referer)] if referer else [])]
            body = b"csrf_token=" + csrf + b"&queue=default&" + field
            answer = exchange(base, "POST", action, headers, body)
            assert answer.status == 303, (field, referer, answer)
            expected = {4: "/jobs", 5: "/workers?x=1"}.get(n, "/")
            assert answer.headers["location"] == expected, (field, referer)


@pytest.mark.parametrize(
    ("allowed", "message"),
    [
        ("jobs.example.com", "a list of host names, not one string"),
        (["http://jobs.example.com"], "allowed_hosts has 'http://jobs.example.com'"),
        (["jobs.example.com:8678"], "without a scheme, port or path"),
        (["jobs.example.com/rota"], "without a scheme, port or path"),
        ([""], "allowed_hosts has ''"),
        ([None], "allowed_hosts has None"),
    ],
)
def test_allowed_hosts_that_no_host_can_match_are_config_errors(
    rota: Rota, allowed: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        create_app(rota, allowed_hosts=allowed)


def test_cli_allowed_hosts_from_options_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: served.append(app))
    monkeypatch.delenv("ROTA_DASHBOARD_TOKEN", raising=False)
    monkeypatch.setenv("ROTA_DASHBOARD_ALLOWED_HOSTS", "env.example, .env-corp.example")
    argv = ["dashboard", "tests.dashboard.demo_app:app", "--allowed-host", "jobs.example.com"]
    assert CliRunner().invoke(main, [*argv, "--allowed-host", "ops.example"]).exit_code == 0
    assert CliRunner().invoke(main, argv[:2]).exit_code == 0
    bad = CliRunner().invoke(main, [*argv[:2], "--allowed-host", "http://x.example"])
    assert bad.exit_code == 2 and "allowed_hosts has 'http://x.example'" in bad.output
    # The stylesheet needs no database: 401 would mean admitted (no: no token), so 200.
    for app, good, other in [
        (served[0], ["jobs.example.com", "ops.example", "localhost"], "env.example"),
        (served[1], ["env.example", "a.env-corp.example"], "jobs.example.com"),
    ]:
        for host in good:
            assert TestClient(app, base_url=f"http://{host}").get(CSS).status_code == 200, host
        assert TestClient(app, base_url=f"http://{other}").get(CSS).status_code == 400
