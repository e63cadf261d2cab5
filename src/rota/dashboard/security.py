"""The dashboard's optional token login, its session cookie, CSRF protection and form limits.

Security choices, and why:

* Pages are rendered on the server by Jinja2 with autoescaping on, so job arguments and error
  messages (user data) can never become markup.
* With a ``token``, every request (pages, actions, static files, ``/metrics``) needs it, as an
  ``Authorization: Bearer`` header or the HttpOnly, SameSite=Strict cookie ``/login`` sets.  The
  cookie holds an HMAC derived from the token, never the token itself, so it survives a restart
  and is useless elsewhere.
* Every action is a POST carrying a CSRF token: the HMAC, under a per-app random secret, of a
  random value kept in its own cookie (signed double-submit).  A page on another site can
  neither read the cookie nor forge the HMAC.
* Redirects after an action go only to a path inside the dashboard, never to a URL a request
  supplies, so an action cannot become an open redirect (``rota.dashboard.paths``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from rota.dashboard.paths import base_path

SESSION_COOKIE = "rota_session"
CSRF_COOKIE = "rota_csrf"
CSRF_FIELD = "csrf_token"
MAX_FORM_BYTES = 16_384
MAX_FORM_FIELDS = 50

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class Keys:
    """The secrets of one dashboard app: its token, the session value and the CSRF secret.

    The CSRF secret is random per app, so a CSRF token from one process (or one app) is worth
    nothing to another; the session value is derived from the token, so logins outlive restarts.
    """

    def __init__(self, token: str | None) -> None:
        self.token = token or None
        self.csrf_secret = secrets.token_bytes(32)
        self.session_value = (
            hmac.new(self.token.encode(), b"rota-dashboard-session", hashlib.sha256).hexdigest()
            if self.token
            else None
        )

    def is_token(self, given: str) -> bool:
        """Whether ``given`` is the token, compared in constant time."""
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())

    def authenticated(self, request: Request) -> bool:
        if self.token is None:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "bearer" and self.is_token(credentials.strip()):
            return True
        cookie = request.cookies.get(SESSION_COOKIE, "")
        assert self.session_value is not None
        return hmac.compare_digest(cookie.encode(), self.session_value.encode())

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self.csrf_secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_valid(self, request: Request, submitted: str) -> bool:
        nonce = request.cookies.get(CSRF_COOKIE, "")
        if not nonce or not submitted:
            return False
        return hmac.compare_digest(self.csrf_token(nonce).encode(), submitted.encode())


def set_strict_cookie(request: Request, response: Response, name: str, value: str) -> None:
    """Set a cookie scripts cannot read, other sites never send, and HTTPS keeps to itself."""
    response.set_cookie(
        name,
        value,
        path=base_path(request) or "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def read_form(request: Request) -> dict[str, str]:
    """The fields of a URL-encoded form (the only kind the dashboard's forms send).

    The body is read up to ``MAX_FORM_BYTES`` whatever ``Content-Length`` claims, so a
    lying or chunked request cannot make the dashboard buffer more.
    """
    declared = request.headers.get("content-length", "").strip()
    if declared and (not declared.isdigit() or not declared.isascii()):
        raise HTTPException(400, "malformed Content-Length")
    if declared and int(declared) > MAX_FORM_BYTES:
        raise HTTPException(413, "form too large")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "form too large")
    text = body.decode("utf-8", errors="replace")
    try:
        return dict(parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS))
    except ValueError:
        raise HTTPException(413, f"a form has at most {MAX_FORM_FIELDS} fields") from None
