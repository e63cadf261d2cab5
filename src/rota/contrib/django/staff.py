"""The dashboard behind Django's own login: only an active staff user's session opens it.

``StaffOnly`` wraps the dashboard's ASGI app. It reads Django's session cookie and asks
Django's own machinery who it belongs to (the session engine, then ``auth.get_user``, which
also ends the session of a user whose password has changed since), in a thread, as Django runs
any ORM code from async code, between ``close_old_connections()`` calls as a request would be.
A browser without a staff session is sent to the admin's login (``settings.LOGIN_URL`` without
the admin) with ``?next=`` back to the page; anything else gets a 403.

The dashboard then runs without a token of its own (every request it sees is admitted), with
``DjangoKeys``: its CSRF secrets come from ``SECRET_KEY``, so every process of the project
accepts the forms of every other, and its session is Django's, so a form's CSRF token is bound
to the staff user's session (a CSRF cookie planted by a sibling site opens nothing). Changes
made from the dashboard are recorded as ``dashboard:<username>``.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from importlib import import_module
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import auth
from django.db import close_old_connections
from django.http import HttpRequest
from django.shortcuts import resolve_url
from django.urls import NoReverseMatch, reverse
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rota.core.clock import Clock
from rota.dashboard.paths import here
from rota.dashboard.security import NO_STORE, SECURITY_HEADERS, Keys, derive

SESSION_SCOPE = "rota.django_session"
"""Where ``StaffOnly`` leaves the admitted request's session key for ``DjangoKeys``."""


@dataclass(frozen=True)
class StaffUser:
    """The admitted user as Starlette's ``request.user`` convention has it
    (``Keys.caller`` records changes under ``display_name``)."""

    display_name: str
    is_authenticated: bool = True


class DjangoKeys(Keys):
    """The dashboard's keys without a token: secrets from ``SECRET_KEY``, sessions Django's."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(None, clock=clock)
        self.csrf_secret = derive(settings.SECRET_KEY, "csrf")
        self.binding_secret = derive(settings.SECRET_KEY, "csrf-binding")

    def session(self, request: Request) -> str | None:
        """A nonce standing for the request's Django session (never the key itself, which is a
        credential), set by ``StaffOnly`` on the requests it admits."""
        key = request.scope.get(SESSION_SCOPE)
        if not key:
            return None
        secret = derive(settings.SECRET_KEY, "django-session")
        return hmac.new(secret, str(key).encode(), hashlib.sha256).hexdigest()


def staff_name(session_key: str) -> str | None:
    """The username of the active staff user the Django session ``session_key`` is logged in
    as, else ``None``. Sync: it reads the session and the user through the ORM."""
    close_old_connections()
    try:
        request = HttpRequest()
        request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        user = auth.get_user(request)
        if user.is_active and getattr(user, "is_staff", False):  # a custom user may have none
            return str(user.get_username())
        return None
    finally:
        close_old_connections()


def login_url() -> str:
    """The admin's login page, or the project's ``LOGIN_URL`` when the admin is not routed."""
    try:
        return reverse("admin:login")
    except NoReverseMatch:
        return resolve_url(settings.LOGIN_URL)


class StaffOnly:
    """An ASGI app admitting to ``app`` only requests of an active staff user's session."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        key = request.cookies.get(settings.SESSION_COOKIE_NAME, "")
        name = await sync_to_async(staff_name)(key) if key else None
        if name is None:
            response = await self.refusal(request)
            await response(scope, receive, send)
            return
        admitted = {**scope, "user": StaffUser(name), SESSION_SCOPE: key}
        await self.app(admitted, receive, send)

    async def refusal(self, request: Request) -> Response:
        """A browser's page view goes to the login, and comes back after it; the rest is 403."""
        headers = {**SECURITY_HEADERS, **NO_STORE}
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            login = await sync_to_async(login_url)()
            target = f"{login}?next={quote(here(request), safe='/')}"
            return RedirectResponse(target, 302, headers)
        return PlainTextResponse(
            "403 Forbidden: a Django staff user's session is required\n", 403, headers
        )
