"""The dashboard's token login, its sessions, CSRF protection and form limits.

Security choices, and why:

* Pages are rendered on the server by Jinja2 with autoescaping on, so job arguments and error
  messages (user data) can never become markup.
* With a ``token``, every request (pages, actions, static files, ``/metrics``) needs it, as an
  ``Authorization: Bearer`` header, or a session: the HttpOnly, SameSite=Strict cookie ``/login``
  sets, minted per login, expiring and revoked by logout (``rota.dashboard.sessions``).  A token
  must have at least ``MIN_TOKEN_LENGTH`` characters; ``token=None`` is the only way to have no
  login, so an empty setting can never turn it off by accident.
* An optional ``metrics_token`` opens ``/metrics`` and nothing else, so a Prometheus server's
  credentials cannot retry or cancel jobs.
* Failed logins and wrong Bearer tokens count against the client's address
  (``sessions.LoginThrottle``): past the limit it gets 429 with ``Retry-After``.
* Every action is a POST carrying a CSRF token, the HMAC of a nonce under a secret derived from
  the token (random per app without one).  Logged in, the nonce is the session's: ``/login``
  sets the CSRF cookie to a value derived from the session's nonce, and an action is checked
  against the nonce inside the signed session cookie, so a token from another session (or a
  CSRF cookie planted by a sibling site) is refused.  Before login, the nonce is the CSRF
  cookie's own random value (signed double-submit), which is what the login form carries.
* Without a token only loopback host names (and ``allowed_hosts``) are answered, against DNS
  rebinding, and a POST from another ``Origin`` is refused, token or not
  (``rota.dashboard.hosts``).  Nothing is decided from ``request.url``, which Starlette builds
  from the ``Host`` header: paths come from the ASGI scope (``rota.dashboard.paths``).
* Redirects after an action go only to a path inside the dashboard, never to a URL a request
  supplies, so an action cannot become an open redirect (``rota.dashboard.paths``).
* A change made from the dashboard is recorded as ``dashboard:<caller>`` (``Keys.caller``): a
  digest of the login session, ``token`` or an application's user name, never a secret itself,
  since a schedule's history is shown to every user and kept in the database.
* Every response says ``Cache-Control: no-store``: pages show jobs' arguments and errors, which
  no shared cache or browser history should keep.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import unicodedata
from datetime import timedelta
from enum import Enum
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from rota.core.checks import duration
from rota.core.clock import Clock, SystemClock
from rota.dashboard.paths import base_path
from rota.dashboard.sessions import DEFAULT_MAX_AGE, LoginThrottle, Sessions
from rota.errors import ConfigError

SESSION_COOKIE = "rota_session"
CSRF_COOKIE = "rota_csrf"
CSRF_FIELD = "csrf_token"
MAX_FORM_BYTES = 16_384
MAX_FORM_FIELDS = 50
MIN_TOKEN_LENGTH = 16
NO_STORE = {"Cache-Control": "no-store"}
MAX_USER_LENGTH = 200
"""Of an enclosing application's user name in an actor (at most 255 characters in all)."""

SECURITY_HEADERS = {
    # connect-src: the schedule form's preview fetches /preview, from this origin only.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class Who(Enum):
    """Who a request is, as far as the guard cares."""

    USER = "user"  # the token, a live session, or a dashboard without a token
    SCRAPER = "scraper"  # the metrics token: /metrics only
    NOBODY = "nobody"  # no credentials, or wrong ones
    THROTTLED = "throttled"  # too many wrong ones lately, whatever it sends now


def check_token(name: str, token: str | None) -> str | None:
    """``token`` if it is one worth having; a ``ConfigError`` naming ``name`` if not."""
    if token is None:
        return None
    if not isinstance(token, str):
        raise ConfigError(f"{name} must be a str or None, got {type(token).__name__}")
    if not token:
        raise ConfigError(
            f"{name} is empty, which would leave the dashboard open to anyone; to have no "
            "login, give no token at all"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"{name} has {len(token)} characters; a dashboard token needs at least "
            f"{MIN_TOKEN_LENGTH} (make one with: python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    if token != token.strip() or not all(" " <= c <= "~" for c in token):
        raise ConfigError(
            f"{name} must be printable ASCII without spaces at either end, as an "
            "Authorization header carries it"
        )
    return token


def derive(token: str, purpose: str) -> bytes:
    """A key for ``purpose`` derived from the token: the same in every process that has it."""
    return hmac.new(token.encode(), f"rota-dashboard-{purpose}".encode(), hashlib.sha256).digest()


def same(given: str, expected: str) -> bool:
    """Whether two secrets are equal, compared in constant time."""
    return hmac.compare_digest(given.encode(), expected.encode())


def client_of(request: Request) -> str:
    """Who failed logins are counted against: the client's IPv4 address, or its IPv6 /64
    (one machine commonly has a whole /64 to pick addresses from)."""
    host = request.client.host if request.client else "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def printable(name: str, limit: int = MAX_USER_LENGTH) -> str:
    """``name`` without control, format or unpaired surrogate characters, trimmed and cut to
    ``limit``: an application's user name made fit to be an actor's."""
    kept = "".join(char for char in name if unicodedata.category(char)[0] != "C")
    return kept.strip()[:limit].strip()


def bearer(request: Request) -> str | None:
    """The credentials of an ``Authorization: Bearer`` header, if the request has one."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


class Keys:
    """The secrets of one dashboard app: its tokens, its sessions and its CSRF secret.

    Every key is derived from the token, so sessions and CSRF tokens work in every process
    serving the same token and survive restarts.  Without a token the CSRF secrets are random
    per app, and there are no sessions.
    """

    def __init__(
        self,
        token: str | None,
        *,
        metrics_token: str | None = None,
        session_max_age: timedelta | float = DEFAULT_MAX_AGE,
        clock: Clock | None = None,
    ) -> None:
        self.token = check_token("token", token)
        self.metrics_token = check_token("metrics_token", metrics_token)
        if self.metrics_token is not None and self.token is None:
            raise ConfigError(
                "metrics_token needs a token: without one every page, /metrics too, is open"
            )
        if self.metrics_token is not None and same(self.metrics_token, self.token or ""):
            raise ConfigError("metrics_token must differ from token: it opens /metrics only")
        max_age = duration(session_max_age, ConfigError, "session_max_age", positive=True)
        clock = clock or SystemClock()
        self.throttle = LoginThrottle(clock)
        self.sessions: Sessions | None = None
        self.csrf_secret = secrets.token_bytes(32)
        self.binding_secret = secrets.token_bytes(32)
        if self.token is not None:
            self.csrf_secret = derive(self.token, "csrf")
            self.binding_secret = derive(self.token, "csrf-binding")
            self.sessions = Sessions(derive(self.token, "session"), max_age, clock)

    # -- who is asking -------------------------------------------------------------------------

    def session(self, request: Request) -> str | None:
        """The nonce of the request's live session, if it has one."""
        if self.sessions is None:
            return None
        return self.sessions.nonce(request.cookies.get(SESSION_COOKIE, ""))

    def identify(self, request: Request) -> Who:
        """Who ``request`` is, by its session cookie or its Bearer token."""
        if self.token is None or self.session(request) is not None:
            return Who.USER
        given = bearer(request)
        return Who.NOBODY if given is None else self.attempt(client_of(request), given)

    def attempt(self, client: str, given: str) -> Who:
        """What the secret ``given`` opens, counted against ``client`` when it opens nothing."""
        if self.throttle.retry_after(client) is not None:
            return Who.THROTTLED
        if self.token is not None and same(given, self.token):
            who = Who.USER
        elif self.metrics_token is not None and same(given, self.metrics_token):
            who = Who.SCRAPER
        else:
            self.throttle.failed(client)
            return Who.NOBODY
        self.throttle.succeeded(client)
        return who

    def caller(self, request: Request) -> str:
        """Who the request's changes are recorded as (``dashboard:<caller>`` in a schedule's
        history), never a secret: the user an enclosing application authenticated (Starlette's
        ``request.user``), else ``session-`` and a digest of the login's nonce (the nonce is
        random, so its digest says nothing of the token), else ``token`` for the Bearer token,
        else ``anonymous`` (a dashboard without a token).  Call it on admitted requests only."""
        user = request.scope.get("user")
        if getattr(user, "is_authenticated", False):
            shown = printable(str(getattr(user, "display_name", "") or ""))
            if shown:
                return shown
        session = self.session(request)
        if session is not None:
            return f"session-{hashlib.sha256(session.encode()).hexdigest()[:12]}"
        if self.token is not None and bearer(request) is not None:
            return "token"
        return "anonymous"

    def retry_after(self, request: Request) -> int:
        """Whole seconds before the throttled client of ``request`` may try again."""
        return self.throttle.retry_after(client_of(request)) or 1

    # -- logging in and out --------------------------------------------------------------------

    def log_in(self, request: Request, response: Response) -> None:
        """Give ``response`` a new session (ending the one the request had) and its CSRF nonce."""
        assert self.sessions is not None
        self.sessions.revoke(request.cookies.get(SESSION_COOKIE, ""))
        nonce, value = self.sessions.mint()
        max_age = int(self.sessions.max_age.total_seconds())
        set_strict_cookie(request, response, SESSION_COOKIE, value, max_age=max_age)
        set_strict_cookie(request, response, CSRF_COOKIE, self.session_csrf_nonce(nonce))

    def log_out(self, request: Request, response: Response) -> None:
        """Revoke the request's session and have the browser forget both cookies."""
        assert self.sessions is not None
        self.sessions.revoke(request.cookies.get(SESSION_COOKIE, ""))
        for name in (SESSION_COOKIE, CSRF_COOKIE):
            response.delete_cookie(name, path=base_path(request) or "/")

    # -- CSRF ----------------------------------------------------------------------------------

    def csrf_token(self, nonce: str) -> str:
        """The token a form embeds for the CSRF cookie holding ``nonce``."""
        return hmac.new(self.csrf_secret, nonce.encode(), hashlib.sha256).hexdigest()

    def session_csrf_nonce(self, session_nonce: str) -> str:
        """The CSRF cookie's value during a session: derived from, and bound to, its nonce.

        It is an HMAC under a key of its own, so no page (the login form embeds the token of
        whatever CSRF cookie it is sent) can compute it for a session it is not.
        """
        return hmac.new(self.binding_secret, session_nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_valid(self, request: Request, submitted: str) -> bool:
        """Whether ``submitted`` is the CSRF token of the request's session, or before login,
        of its CSRF cookie."""
        session = self.session(request)
        if session is not None:
            nonce = self.session_csrf_nonce(session)
        else:
            nonce = request.cookies.get(CSRF_COOKIE, "")
        if not nonce or not submitted:
            return False
        return same(submitted, self.csrf_token(nonce))

    def pair_csrf_cookie(self, request: Request, response: Response) -> None:
        """Put back the session's CSRF cookie if the browser lost it (or was sent another):
        the next page then embeds the session's CSRF token again."""
        session = self.session(request)
        if session is None:
            return
        nonce = self.session_csrf_nonce(session)
        if request.cookies.get(CSRF_COOKIE) != nonce:
            set_strict_cookie(request, response, CSRF_COOKIE, nonce)


def set_strict_cookie(
    request: Request, response: Response, name: str, value: str, *, max_age: int | None = None
) -> None:
    """Set a cookie scripts cannot read, other sites never send, and HTTPS keeps to itself."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=base_path(request) or "/",
        httponly=True,
        samesite="strict",
        secure=request.scope.get("scheme") == "https",
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
