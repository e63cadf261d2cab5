"""rota's dashboard in the shop's ASGI application: under ``/rota/``, linked from the admin, for
active staff users only (Django's login), its forms still protected by their CSRF tokens."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client

from conftest import Browser
from rota.contrib.django import DjangoRota

PASSWORD = "correct horse battery staple"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
LINK = re.compile(r'href="([^"]+)"')


def logged_in(browser: Browser, user: User) -> Browser:
    """``browser`` with a Django session of ``user``'s (made as ``Client.force_login`` makes
    it, for users the admin's own login refuses)."""
    client = Client()
    client.force_login(user)
    browser.cookies.set("sessionid", client.cookies["sessionid"].value)
    return browser


def admin_login(browser: Browser, username: str, target: str) -> str:
    """Log in through the admin's own form, as a person does; where it sends the browser."""
    page = browser.get(f"/admin/login/?next={target}")
    assert page.status_code == 200
    form = {"username": username, "password": PASSWORD, "next": target}
    response = browser.post("/admin/login/", data=form)
    assert response.status_code == 302
    return response.headers["location"]


def test_a_staff_user_logs_in_at_the_admin_and_reaches_the_dashboard(
    rota: DjangoRota, browser: Browser
) -> None:
    User.objects.create_user("boss", password=PASSWORD, is_staff=True)
    refused = browser.get("/rota/jobs?state=failed", headers={"accept": "text/html"})
    assert refused.status_code == 302
    assert refused.headers["location"] == "/admin/login/?next=/rota/jobs%3Fstate%3Dfailed"

    assert admin_login(browser, "boss", "/rota/jobs?state=failed") == "/rota/jobs?state=failed"
    page = browser.get("/rota/jobs?state=failed")
    assert page.status_code == 200
    assert "rota" in page.text
    links = {link for link in LINK.findall(page.text) if not urlsplit(link).netloc}
    assert {"/rota/", "/rota/jobs", "/rota/schedules", "/rota/workers"} <= links
    assert all(link.startswith("/rota/") for link in links)
    for link in sorted(links):
        assert browser.get(link).status_code == 200, link

    browser.post("/admin/logout/")
    assert browser.get("/rota/", headers={"accept": "text/html"}).status_code == 302


def test_the_admin_index_links_to_the_dashboard(rota: DjangoRota, browser: Browser) -> None:
    User.objects.create_superuser("boss", password=PASSWORD)
    admin_login(browser, "boss", "/admin/")
    index = browser.get("/admin/")
    assert index.status_code == 200
    assert '<div class="module" id="rota-dashboard">' in index.text
    assert '<a href="/rota/">Background jobs and schedules</a>' in index.text
    assert "Orders" in index.text  # the admin's own index is still there, below the link


@pytest.mark.parametrize(
    "user",
    [
        None,
        {"username": "clerk", "is_staff": False},
        {"username": "former", "is_staff": True, "is_active": False},
    ],
    ids=["anonymous", "not-staff", "inactive-staff"],
)
def test_only_active_staff_may_open_the_dashboard(
    rota: DjangoRota, browser: Browser, user: dict[str, object] | None
) -> None:
    if user is not None:
        logged_in(browser, User.objects.create_user(password=PASSWORD, **user))
    page = browser.get("/rota/", headers={"accept": "text/html"})
    assert page.status_code == 302
    assert page.headers["location"] == "/admin/login/?next=/rota/"
    for path in ("/rota/metrics", "/rota/jobs", "/rota/static/dashboard.css"):
        assert browser.get(path).status_code == 403, path
    assert browser.post("/rota/queues/pause", data={"queue": "default"}).status_code == 403
    assert rota.paused_queues() == []


def test_the_dashboards_forms_need_their_csrf_token(rota: DjangoRota, browser: Browser) -> None:
    logged_in(browser, User.objects.create_user("boss", password=PASSWORD, is_staff=True))
    page = browser.get("/rota/schedules")
    (token, *_) = TOKEN.findall(page.text)
    action = "/rota/schedules/orders.tasks.cancel_stale_orders/pause"

    assert browser.post(action, data={"csrf_token": "forged"}).status_code == 403
    other = logged_in(Browser(), User.objects.create_user("other", is_staff=True))
    assert other.post(action, data={"csrf_token": token}).status_code == 403  # not its session
    assert rota.schedule_history("orders.tasks.cancel_stale_orders")[0].action.value != "paused"

    done = browser.post(action, data={"csrf_token": token, "next": "/rota/schedules"})
    assert (done.status_code, done.headers["location"]) == (303, "/rota/schedules")
    change = rota.schedule_history("orders.tasks.cancel_stale_orders")[0]
    assert (change.action.value, change.actor) == ("paused", "dashboard:boss")
    resume = "/rota/schedules/orders.tasks.cancel_stale_orders/resume"
    assert browser.post(resume, data={"csrf_token": token}).status_code == 303


def test_the_dashboard_without_its_trailing_slash(rota: DjangoRota, browser: Browser) -> None:
    logged_in(browser, User.objects.create_user("boss", is_staff=True))
    response = browser.get("/rota")
    assert response.status_code in (301, 302, 307, 308)
    assert urlsplit(response.headers["location"]).path == "/rota/"
    assert browser.get("/rotary").status_code == 404  # Django's: not under the prefix
