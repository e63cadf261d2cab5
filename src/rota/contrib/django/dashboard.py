"""rota's dashboard served by a Django project's ASGI application, under ``ROTA["DASHBOARD"]``.

::

    # asgi.py
    from django.core.asgi import get_asgi_application
    from rota.contrib.django.dashboard import with_dashboard

    application = with_dashboard(get_asgi_application())

``with_dashboard`` routes the requests under ``PATH`` (``/rota/``) to the dashboard, with that
prefix as their ``root_path`` so every link, redirect and cookie stays under it, and everything
else to Django. With ``AUTH`` ``"staff"`` (the default) only an active staff user's Django
session opens it (``rota.contrib.django.staff``); with ``"token"`` the dashboard's own login
does. Either way it answers to the host names of ``ALLOWED_HOSTS`` (and loopback names): its
requests never pass Django's own check of ``Host``. The dashboard is built at its first
request, not at import: the Rota is then on the database Django connects to by then (a test
database under a test runner), as everywhere else.

Django's ASGI handler refuses lifespan events, which uvicorn then logs as an error; this app
answers them itself, and at start-up prepares the project's Rota (``DjangoRota.prepare``: it
connects and checks its schema), so that a view's first ``queue()`` inside ``atomic()`` is not
the process's first use of it (on SQLite that use would wait for the view's own transaction).
A database that cannot be reached then is logged, and the server starts all the same, as
Django's does: the Rota connects at its first use instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from starlette.types import ASGIApp, Receive, Scope, Send

from rota.app import Rota
from rota.contrib.django.options import DashboardOptions
from rota.contrib.django.project import DjangoRota, get_rota, project_options
from rota.errors import ConfigError, RotaError

logger = logging.getLogger(__name__)

ALLOWED_HOSTS = "settings.ALLOWED_HOSTS"

DjangoASGI = Callable[[Any, Any, Any], Awaitable[None]]
"""Django's ``ASGIHandler`` (its types are not quite Starlette's ``ASGIApp``), or any ASGI app."""


def dashboard_options() -> DashboardOptions:
    """``settings.ROTA["DASHBOARD"]``, read; a ``ConfigError`` when the project has none."""
    chosen = project_options().dashboard
    if chosen is None:
        raise ConfigError(
            "settings.ROTA has no 'DASHBOARD' key: set ROTA['DASHBOARD'] = "
            "{'PATH': '/rota/', 'AUTH': 'staff'} to serve the dashboard"
        )
    return chosen


def allowed_hosts() -> list[str]:
    """The host names Django answers to: ``ALLOWED_HOSTS``, or under ``DEBUG`` without one,
    Django's own defaults.  The dashboard's requests never reach Django's check of ``Host``, so
    the dashboard makes it itself, with the same list."""
    if settings.DEBUG and not settings.ALLOWED_HOSTS:
        return [".localhost", "127.0.0.1", "[::1]"]
    return list(settings.ALLOWED_HOSTS)


def build_dashboard(rota: Rota, chosen: DashboardOptions) -> ASGIApp:
    """The dashboard app of ``rota`` that ``chosen`` asks for."""
    from rota.dashboard import create_app

    if chosen.auth == "token":
        return create_app(
            rota,
            token=chosen.token,
            metrics_token=chosen.metrics_token,
            allowed_hosts=allowed_hosts(),
        )
    from rota.contrib.django.staff import DjangoKeys, StaffOnly
    from rota.dashboard.app import DashboardApp
    from rota.dashboard.hosts import Hosts

    hosts = Hosts(allowed_hosts(), token=False, setting=ALLOWED_HOSTS)
    return StaffOnly(DashboardApp(rota, DjangoKeys(clock=rota.clock), hosts).starlette())


class WithDashboard:
    """An ASGI app: the dashboard under its prefix, ``django`` (the project's app) elsewhere."""

    def __init__(self, django: DjangoASGI, rota: Rota | None, chosen: DashboardOptions) -> None:
        self.django = django
        self.rota = rota
        self.options = chosen
        self.prefix = chosen.path.rstrip("/")
        self.dashboard: ASGIApp | None = None

    def app(self) -> ASGIApp:
        """The dashboard, built at the first request (one event loop: no two build it)."""
        if self.dashboard is None:
            self.dashboard = build_dashboard(self.rota or get_rota(), self.options)
        return self.dashboard

    async def prepare(self) -> None:
        """The project's Rota connected and its schema checked, in a thread (it blocks)."""
        rota = self.rota or get_rota()
        if not isinstance(rota, DjangoRota):
            return
        try:
            await sync_to_async(rota.prepare, thread_sensitive=False)()
        except RotaError as error:
            logger.warning("rota is not ready at start-up (%s: %s)", error.code, error)

    def inside(self, scope: Scope) -> dict[str, Any] | None:
        """The dashboard's scope for a request under the prefix, else ``None``.

        The path is taken relative to the server's ``root_path`` (a site served under a
        prefix of its own), and the dashboard's ``root_path`` is both together: as ASGI says,
        its ``path`` keeps the whole of the URL's path."""
        root = str(scope.get("root_path", "")).rstrip("/")
        path = str(scope["path"])
        relative = path[len(root) :] if root and path.startswith(root + "/") else path
        if relative != self.prefix and not relative.startswith(self.prefix + "/"):
            return None
        return {**scope, "root_path": root + self.prefix, "path": root + relative}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send, self.prepare)
            return
        child = self.inside(scope) if scope["type"] == "http" else None
        if child is None:
            await self.django(scope, receive, send)
            return
        await self.app()(child, receive, send)


async def lifespan(receive: Receive, send: Send, start: Callable[[], Awaitable[None]]) -> None:
    """Start-up (``start``, then acknowledged) and shut-down (acknowledged: nothing to stop)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await start()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def with_dashboard(django: DjangoASGI, rota: Rota | None = None) -> WithDashboard:
    """``django`` (``get_asgi_application()``) with the dashboard of ``rota`` (the project's,
    ``from rota.contrib.django import rota``, unless given) under ``ROTA["DASHBOARD"]["PATH"]``.

    The setting is read now, and its tokens checked, so a project without it, or with a token
    too short to be one, fails at start, not at a request."""
    chosen = dashboard_options()
    from rota.dashboard.hosts import check_allowed

    check_allowed(allowed_hosts(), ALLOWED_HOSTS)  # ConfigError for an entry no Host matches
    if chosen.auth == "token":
        from rota.dashboard.security import Keys

        Keys(chosen.token, metrics_token=chosen.metrics_token)  # ConfigError for a bad one
    return WithDashboard(django, rota, chosen)
