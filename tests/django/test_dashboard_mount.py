"""``ROTA["DASHBOARD"]`` as rota reads it, and ``with_dashboard``'s routing: the dashboard under
its prefix (the site's own ``root_path`` included), everything else to Django, lifespan answered.

The staff login, the admin's link and the CSRF checks under Django's sessions are tested in
the example project, which has the admin (``examples/django_shop/tests/test_dashboard.py``,
run by ``tests/examples``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.db import transaction
from django.test import override_settings
from starlette.types import Message, Receive, Scope, Send

from rota import ConfigError, JobContext, JobState
from rota.contrib.django import DjangoRota, options
from rota.contrib.django.checks import admin_link
from rota.contrib.django.dashboard import with_dashboard
from rota.contrib.django.options import DashboardOptions
from tests.django.conftest import on
from tests.django.shop.models import Order

TOKEN = "a-dashboard-token-of-some-length"


def test_the_dashboard_setting_and_its_defaults() -> None:
    assert options.read({}).dashboard is None
    assert options.read({"DASHBOARD": {}}).dashboard == DashboardOptions("/rota/", "staff")
    chosen = options.read(
        {"DASHBOARD": {"PATH": "/ops/jobs/", "AUTH": "token", "TOKEN": TOKEN}}
    ).dashboard
    assert chosen == DashboardOptions("/ops/jobs/", "token", TOKEN)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ([], "must be a dict"),
        ({"PAHT": "/rota/"}, r"unknown key 'PAHT' \(did you mean 'PATH'\?\)"),
        ({"PATH": "/"}, "path below the site's root"),
        ({"PATH": "rota/"}, "starts and ends with '/'"),
        ({"PATH": "/rota"}, "starts and ends with '/'"),
        ({"PATH": "/a/../rota/"}, "path below"),
        ({"PATH": "/a//b/"}, "path below"),
        ({"PATH": "/rota?x/"}, "path below"),
        ({"AUTH": "none"}, "one of staff, token"),
        ({"AUTH": "token"}, "needs a TOKEN"),
        ({"TOKEN": TOKEN}, "for AUTH 'token' only"),
    ],
)
def test_a_wrong_dashboard_setting_is_a_clear_config_error(setting: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        options.read({"DASHBOARD": setting})


def test_without_the_setting_there_is_no_dashboard_to_mount() -> None:
    with pytest.raises(ConfigError, match="no 'DASHBOARD' key"):
        with_dashboard(django_app)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ({"TOKEN": "short"}, "at least 16"),
        ({"TOKEN": TOKEN, "METRICS_TOKEN": TOKEN}, "must differ"),
    ],
)
def test_a_bad_token_fails_the_mount_not_a_request(tokens: dict[str, str], message: str) -> None:
    with (
        override_settings(ROTA={"DASHBOARD": {"AUTH": "token", **tokens}}),
        pytest.raises(ConfigError, match=message),
    ):
        with_dashboard(django_app)


async def django_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Stands for Django's ASGI app: says which path and root_path it was given."""
    body = f"django {scope['root_path']}|{scope['path']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def get(app: Any, path: str, root_path: str = "", **headers: str) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, root_path=root_path)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(root_path + path, headers=headers)

    return asyncio.run(send())


@pytest.mark.parametrize("alias", on("sqlite"))
@pytest.mark.parametrize("root_path", ["", "/shop"])
def test_requests_under_the_prefix_reach_the_dashboard_and_the_rest_django(
    make_rota: Callable[..., DjangoRota], alias: str, root_path: str
) -> None:
    rota = make_rota(alias)
    rota.jobs()  # its tables made
    setting = {"PATH": "/ops/rota/", "AUTH": "token", "TOKEN": TOKEN}
    with override_settings(ROTA={"DASHBOARD": setting}):
        app = with_dashboard(django_app, rota)
    bearer = {"authorization": f"Bearer {TOKEN}"}

    page = get(app, "/ops/rota/jobs", root_path, **bearer)
    assert page.status_code == 200
    assert f'href="{root_path}/ops/rota/schedules"' in page.text
    assert get(app, "/ops/rota/jobs", root_path).status_code == 401  # the token's login
    for elsewhere in ("/", "/ops/", "/ops/rotary", "/admin/"):
        response = get(app, elsewhere, root_path)
        assert response.text == f"django {root_path}|{root_path}{elsewhere}"


@pytest.mark.parametrize("alias", on("sqlite"))
def test_the_dashboard_answers_to_the_host_names_of_allowed_hosts(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    """Its requests never reach Django's own check of Host, so it makes that check itself, with
    Django's list (and its defaults under DEBUG), read at its first request."""
    rota = make_rota(alias)
    rota.jobs()  # its tables made
    bearer = {"authorization": f"Bearer {TOKEN}"}
    dashboard = {"DASHBOARD": {"PATH": "/rota/", "AUTH": "token", "TOKEN": TOKEN}}
    with override_settings(ROTA=dashboard, ALLOWED_HOSTS=["shop.example", ".corp.example"]):
        app = with_dashboard(django_app, rota)
        for host in ("shop.example", "a.corp.example:8000", "localhost"):
            assert get(app, "/rota/jobs", host=host, **bearer).status_code == 200, host
        for host in ("evil.example", "testserver", "shop.example.evil"):
            refused = get(app, "/rota/jobs", host=host, **bearer)
            assert refused.status_code == 400 and "ALLOWED_HOSTS" in refused.text, host
    with override_settings(ROTA=dashboard, ALLOWED_HOSTS=[], DEBUG=True):
        app = with_dashboard(django_app, rota)
        assert get(app, "/rota/jobs", host="shop.localhost", **bearer).status_code == 200
        assert get(app, "/rota/jobs", host="shop.example", **bearer).status_code == 400
    with (
        override_settings(ROTA=dashboard, ALLOWED_HOSTS=["shop.example:8000"]),
        pytest.raises(ConfigError, match=r"settings\.ALLOWED_HOSTS has 'shop\.example:8000'"),
    ):
        with_dashboard(django_app, rota)


def run_lifespan(app: Any) -> list[str]:
    """What ``app`` answers a server's lifespan start-up and shut-down with."""
    sent: list[Message] = []
    messages: list[Message] = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app({"type": "lifespan"}, receive, send))
    return [message["type"] for message in sent]


@pytest.mark.parametrize("alias", on("sqlite"))
def test_the_lifespan_prepares_the_rota_for_a_first_queue_inside_a_transaction(
    make_rota: Callable[..., DjangoRota], alias: str
) -> None:
    """On SQLite a Rota's first use waits for Django's write lock; prepared at start-up, the
    first use may be a queue() inside atomic() after the transaction wrote."""
    rota = make_rota(alias)

    @rota.task
    def ship(ctx: JobContext, order: int) -> None: ...

    with override_settings(ROTA={"DASHBOARD": {}}):
        app = with_dashboard(django_app, rota)
    assert run_lifespan(app) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert app.dashboard is None  # built at its first request only
    with transaction.atomic(using=alias):
        order = Order.objects.using(alias).create(reference="L-1")
        job = rota.queue(ship, order.id)
    assert rota.job(job).state is JobState.PENDING


def test_the_admin_link_needs_rota_before_the_admin() -> None:
    apps = ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes"]
    apps += ["django.contrib.sessions", "django.contrib.messages"]
    with override_settings(ROTA={"DASHBOARD": {}}, INSTALLED_APPS=[*apps, "rota.contrib.django"]):
        (warning,) = admin_link(app_configs=None, databases=None)
    assert warning.id == "rota.W001"
    with override_settings(ROTA={"DASHBOARD": {}}, INSTALLED_APPS=["rota.contrib.django", *apps]):
        assert admin_link(app_configs=None, databases=None) == []
    with override_settings(INSTALLED_APPS=[*apps, "rota.contrib.django"]):
        assert admin_link(app_configs=None, databases=None) == []  # no dashboard, no link to miss
