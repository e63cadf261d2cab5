"""Who may call the HTTP API, and what they may do: Bearer tokens with a scope.

Why it looks like this:

* The API is for programs, so it is authenticated by an ``Authorization: Bearer`` header and
  nothing else.  A session cookie never opens it: a browser sends cookies with requests other
  sites make it send, so an API that honoured them would need CSRF tokens; one that ignores
  them needs none.
* A token has a scope: ``read`` lists and shows, ``operate`` also changes (queues, cancels,
  retries, pauses, edits).  The dashboard's token has ``operate``; ``api_tokens`` add others, so
  a monitoring script can be given a token that cannot cancel anything.  The metrics token opens
  ``/metrics`` only, never the API.
* Every token is compared with every known one in constant time, and a wrong one counts against
  the client's address in the dashboard's login throttle, so guessing is as slow here as at
  ``/login``.
* A change made through the API is recorded in schedules' histories as ``api:<token id>``: a
  digest of the token, never the token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rota.dashboard.api.replies import http_problem
from rota.dashboard.paths import route_path
from rota.dashboard.security import Keys, bearer, check_token, client_of, same
from rota.errors import ConfigError

OPEN_PATHS = frozenset({"/openapi.json"})
"""The API's description: the same document for everyone, and nothing of the data."""
CALLER = "rota.api.caller"
"""Where the authenticated caller is kept in the ASGI scope."""


class Access(str, Enum):
    """What a token may do: ``read``, or ``operate`` (read and change)."""

    READ = "read"
    OPERATE = "operate"


@dataclass(frozen=True)
class Caller:
    """An authenticated API caller: its token's scope and an id that is no secret."""

    access: Access
    id: str

    @property
    def actor(self) -> str:
        return f"api:{self.id}"


def token_id(token: str) -> str:
    return "token-" + hashlib.sha256(token.encode()).hexdigest()[:12]


def api_tokens(given: Mapping[str, str] | None, keys: Keys) -> dict[str, Caller]:
    """Every token the API takes, with its caller; ``ConfigError`` for a bad token or scope,
    or a token that is also the dashboard's or the metrics'."""
    callers: dict[str, Caller] = {}
    if keys.token is not None:
        callers[keys.token] = Caller(Access.OPERATE, "dashboard-token")
    if given is None:
        return callers
    if not isinstance(given, Mapping):
        raise ConfigError(f"api_tokens must map tokens to scopes, got {type(given).__name__}")
    for token, scope in given.items():
        check_token("an API token", token)
        if scope not in {access.value for access in Access}:
            raise ConfigError(f"an API token's scope must be 'read' or 'operate', got {scope!r}")
        for other in (keys.token, keys.metrics_token):
            if other is not None and same(token, other):
                raise ConfigError("an API token must differ from the dashboard and metrics tokens")
        callers[token] = Caller(Access(scope), token_id(token))
    return callers


def scoped_tokens(values: Mapping[Access, str | None]) -> dict[str, str]:
    """``api_tokens`` from lists of tokens (one list per scope, separated by commas or
    whitespace), as ``$ROTA_API_TOKENS_READ`` and ``$ROTA_API_TOKENS_OPERATE`` give them."""
    tokens: dict[str, str] = {}
    for access, text in values.items():
        for token in (text or "").replace(",", " ").split():
            if tokens.get(token, access.value) != access.value:
                raise ConfigError("a token is listed with both the read and the operate scope")
            tokens[token] = access.value
    return tokens


class Authenticate:
    """ASGI middleware of the API's app: admits a request whose Bearer token is known (putting
    its ``Caller`` in the scope), and answers any other with a JSON 401 (or 429 while its
    client is throttled)."""

    def __init__(self, app: ASGIApp, *, callers: Mapping[str, Caller], keys: Keys) -> None:
        self.app, self.callers, self.keys = app, dict(callers), keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or route_path(scope) in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        caller = self.identify(request)
        if isinstance(caller, Response):
            await caller(scope, receive, send)
            return
        scope[CALLER] = caller
        await self.app(scope, receive, send)

    def identify(self, request: Request) -> Caller | Response:
        client = client_of(request)
        wait = self.keys.throttle.retry_after(client)
        if wait is not None:
            message = "too many wrong tokens from your address; wait and try again"
            return http_problem(429, message, {"Retry-After": str(wait)})
        given = bearer(request)
        found = None
        if given:
            for token, caller in self.callers.items():  # no early exit: constant time
                if same(given, token):
                    found = caller
        if found is None:
            if given is not None:
                self.keys.throttle.failed(client)
            message = "an API token is required: Authorization: Bearer <token>"
            if given:
                message = "the token is not one this API takes"
            return http_problem(401, message, {"WWW-Authenticate": 'Bearer realm="rota"'})
        self.keys.throttle.succeeded(client)
        return found


def caller_of(request: Request) -> Caller:
    caller = request.scope.get(CALLER)
    assert isinstance(caller, Caller), "the API's routes run behind Authenticate"
    return caller
