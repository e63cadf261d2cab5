"""The dashboard's HTTP JSON API, mounted at ``/api``: jobs, schedules, queues, counts, health.

It is its own Starlette app inside the dashboard's, so that it has its own authentication
(Bearer tokens with a scope, ``auth``), and its own error answers (JSON, ``replies``) instead
of the dashboard's pages; the dashboard's guard still checks ``Host`` and ``Origin`` first.
Each resource's routes are in a module of their own (``jobs``, ``schedules``, ``service``);
``openapi`` describes them all, at ``/api/openapi.json``.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rota.app import Rota
from rota.dashboard.api import jobs, schedules, service
from rota.dashboard.api.auth import Access, Authenticate, Caller, api_tokens, scoped_tokens
from rota.dashboard.api.openapi import document
from rota.dashboard.api.replies import http_problem, reply
from rota.dashboard.api.routing import routes
from rota.dashboard.paths import base_path
from rota.dashboard.security import Keys

__all__ = ["Access", "Caller", "api_app", "api_tokens", "scoped_tokens"]

TABLE = [*jobs.ROUTES, *schedules.ROUTES, *service.ROUTES]


async def openapi(request: Request) -> Response:
    return reply(document(base_path(request)))


async def http_error(request: Request, exc: Exception) -> Response:
    """The router's 404 and 405, as JSON."""
    assert isinstance(exc, HTTPException)
    return http_problem(exc.status_code, str(exc.detail), exc.headers)


def api_app(rota: Rota, keys: Keys, tokens: Mapping[str, str] | None = None) -> Starlette:
    """The API of ``rota``, taking the dashboard's token (operate) and ``tokens`` (token to
    ``read`` or ``operate``); ``ConfigError`` for a bad one."""
    callers: dict[str, Caller] = api_tokens(tokens, keys)
    return Starlette(
        routes=[Route("/openapi.json", openapi), *routes(rota, TABLE)],
        middleware=[Middleware(Authenticate, callers=callers, keys=keys)],
        exception_handlers={HTTPException: http_error},
    )
