"""Turning a page's context into an HTML response, with the headers and CSRF token it needs.

Every page goes through ``Renderer.render``, so none can miss the security headers or a form
without its CSRF token, whether it is a page, an error or the login form.

Templates put data into URLs only through the ``segment`` and ``query`` filters: a schedule
named ``../schedules/victim`` is one path segment, ``..%2Fschedules%2Fvictim``, which neither a
browser nor a proxy resolves into another schedule's URL (Jinja's own ``urlencode`` keeps
``/`` as it is).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from rota.dashboard.paths import base_path, here, route_path
from rota.dashboard.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SECURITY_HEADERS,
    Keys,
    set_strict_cookie,
)
from rota.display import job_state, progress, span, took, when

TEMPLATES = Path(__file__).parent / "templates"


def segment(value: object) -> str:
    """``value`` as one percent-encoded path segment: ``/``, ``?``, ``#`` and ``%`` included."""
    return quote(str(value), safe="")


def query(params: Mapping[str, object]) -> str:
    """A query string of ``params``, every name and value percent-encoded."""
    return urlencode({name: str(value) for name, value in params.items()})


class Renderer:
    """The dashboard's Jinja2 templates, autoescaped, and the keys their forms are signed with;
    every page names the namespace it shows."""

    def __init__(self, keys: Keys, namespace: str) -> None:
        self.keys = keys
        self.templates = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(enabled_extensions=("html",), default=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.globals["namespace"] = namespace
        self.templates.filters.update(
            when=when,
            age=span,
            took=took,
            progress=progress,
            segment=segment,
            query=query,
            job_state=job_state,
        )

    def render(
        self, request: Request, template: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        """A page, with the CSRF token its forms embed (and the cookie it pairs with).

        During a session the token is the session's, whatever CSRF cookie the request
        brought, so a page served before the session's cookie is paired (the first page after
        an enclosing application's login) has forms that work."""
        session = self.keys.session(request)
        if session is not None:
            nonce = self.keys.session_csrf_nonce(session)
        else:
            nonce = request.cookies.get(CSRF_COOKIE) or ""
        fresh = not nonce
        if fresh:
            nonce = secrets.token_urlsafe(32)
        html = self.templates.get_template(template).render(
            **context,
            base=base_path(request),
            rel=route_path(request.scope) or "/",
            here=here(request),
            csrf_field=CSRF_FIELD,
            csrf_token=self.keys.csrf_token(nonce),
            auth_enabled=self.keys.token is not None,
        )
        response = HTMLResponse(html, status_code=status)
        response.headers.update(SECURITY_HEADERS)
        if fresh:
            set_strict_cookie(request, response, CSRF_COOKIE, nonce)
        return response

    def error(self, request: Request, status: int, title: str, message: str) -> HTMLResponse:
        return self.render(request, "error.html", {"title": title, "message": message}, status)
