"""The dashboard's front door, against a real uvicorn with requests written byte for byte: no
``Host`` value opens a page or applies an action without the token, whatever path it makes
``request.url`` show.

Every route of the app is tried (``DashboardApp.routes``: a route added later is tried too),
each POST with a CSRF token and cookie that really pair (the login form gives them to anyone),
and after each request the database must be as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.routing import Mount, Route

from rota import JobContext, Rota
from rota.dashboard import create_app
from tests.dashboard.serving import Answer, exchange, serving

TOKEN = "front-door-token-0123456789"
SECRET = "secret-argument-7f3a"
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
    return (store.jobs(limit=None), store.schedules.all(), store.paused_queues())


def form_pair(base: str) -> tuple[bytes, bytes]:
    """A CSRF cookie and the token that pairs with it, as the login form hands them out."""
    page = exchange(base, "GET", "/login", [("Host", base.split("//")[1].encode())])
    found = CSRF.search(page.body)
    assert page.status == 200 and found, page
    cookie = page.headers["set-cookie"].split(";")[0].encode()
    return cookie, found.group(1)


def send(base: str, target: Target, host: bytes, cookie: bytes, csrf: bytes) -> Answer:
    headers = [("Host", host), ("Cookie", cookie), ("Accept", b"text/html")]
    if target.method == "GET":
        return exchange(base, "GET", target.path, headers)
    body = b"csrf_token=" + csrf + b"&queue=default&cron=5+4+*+*+*&tz=UTC&version=1&next=/"
    form = ("Content-Type", b"application/x-www-form-urlencoded")
    return exchange(base, "POST", target.path, [*headers, form], body)


def test_no_host_header_opens_a_page_or_an_action_without_the_token(seeded: Seeded) -> None:
    app = create_app(seeded.rota, token=TOKEN)
    before = state(seeded.rota)
    wrong: list[str] = []
    with serving(app, probe="/login") as base:
        cookie, csrf = form_pair(base)
        for target in targets(app, seeded):
            # /login is open to all: its form, or its refusal of a wrong token, is no leak.
            allowed = {400, 401, 403} | ({200, 429} if target.path == "/login" else set())
            for host in HOSTILE_HOSTS:
                answer = send(base, target, host, cookie, csrf)
                where = f"{target.method} {target.path} Host: {host[:40]!r}"
                if answer.status not in allowed or SECRET.encode() in answer.body:
                    wrong.append(f"{where}: {answer.status} {answer.body[:80]!r}")
                if state(seeded.rota) != before:
                    pytest.fail(f"{where} changed the database ({answer.status})")
    assert wrong == []
