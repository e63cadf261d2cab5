"""Which ``Host`` a dashboard answers to, and which ``Origin`` may post to it.

Why:

* DNS rebinding: a page on ``attacker.example`` can make its own name resolve to 127.0.0.1;
  the browser then sends the page's requests (``Host: attacker.example:8678``) to a dashboard
  listening on loopback, and lets the page read the answers as its own.  Listening on loopback
  is all that guards a dashboard without a token, so without one it answers only to loopback
  names (``localhost``, ``127.0.0.0/8``, ``[::1]``, on any port), which no other site can make a
  browser send for itself, and to the names ``allowed_hosts`` adds.  With a token and no
  ``allowed_hosts`` it answers to any name: the token guards it, and a rebound name has none
  of the dashboard's cookies.
* A ``Host`` that is not a plain ``host[:port]``, or a request with two, is refused whatever
  the token: no link, redirect or origin is ever built from one.
* Every request that can act (any method but GET and HEAD) whose ``Origin`` header is present
  must come from the dashboard's own origin: the scheme the server saw and the host and port of
  the ``Host`` the request was admitted under.  ``Origin: null`` (a sandboxed frame, a
  redirect across sites) is refused; a request without ``Origin`` (an older browser, curl)
  still needs its CSRF token.  Behind a proxy that ends TLS, the server must know the scheme
  (uvicorn's ``--proxy-headers``), or the browser's ``https`` origin does not match.
* A request without ``Host`` (HTTP/1.0) names the address it reached, as the server reports it.

``allowed_hosts`` entries are written as Django's ``ALLOWED_HOSTS``: a name or address, matched
on any port; ``.example.com`` for that name and all below it; ``*`` for any, which leaves a
dashboard without a token open to DNS rebinding again.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import Scope

from rota.errors import ConfigError

HOST = re.compile(
    r"(?P<name>\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?)"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
MAX_HOST_LENGTH = 261
"""A DNS name's 253 characters and a port's 6."""
DEFAULT_PORTS = {"http": 80, "https": 443}
SAFE_METHODS = frozenset({"GET", "HEAD"})
HOW_TO_WIDEN = (
    "To serve it under another name, add the name to allowed_hosts: "
    "create_app(..., allowed_hosts=[...]), `rota dashboard --allowed-host NAME` "
    "(or $ROTA_DASHBOARD_ALLOWED_HOSTS), or ALLOWED_HOSTS in a Django project"
)


@dataclass(frozen=True)
class Authority:
    """A request's host, in lower case without a trailing dot (an IPv6 address in brackets),
    and its port, if it names one."""

    name: str
    port: int | None


def parse_authority(text: str) -> Authority | None:
    """``text`` (``host[:port]``) read, or ``None`` if it is anything more or less."""
    match = HOST.fullmatch(text) if len(text) <= MAX_HOST_LENGTH else None
    if match is None:
        return None
    if match["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(match["ipv6"])
        except ValueError:
            return None
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    return Authority(match["name"].lower().rstrip("."), port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: localhost, 127.0.0.0/8 or ::1."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def header_values(scope: Scope, name: bytes) -> list[str]:
    """Every value of the header ``name`` (lower case) the request carries."""
    return [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name]


def authority_of(scope: Scope) -> Authority | None:
    """What the request names: its one ``Host`` header, or without one the address it reached;
    ``None`` if it has two, or one that is not a ``host[:port]``."""
    given = header_values(scope, b"host")
    if given:
        return parse_authority(given[0]) if len(given) == 1 else None
    server = scope.get("server")
    if not server or not server[0]:
        return None
    host, port = str(server[0]), server[1]
    return Authority(f"[{host}]" if ":" in host else host.lower(), port)


def origin(scope: Scope, authority: Authority) -> tuple[str, str, int]:
    """The dashboard's own origin for a request admitted under ``authority``."""
    scheme = str(scope.get("scheme", "http")).lower()
    return scheme, authority.name, authority.port or DEFAULT_PORTS.get(scheme, 80)


def same_origin(scope: Scope, url: str) -> bool:
    """Whether ``url`` (an ``Origin``, or a ``Referer``'s scheme and host) is the dashboard's
    own origin for this request."""
    ours = authority_of(scope)
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ in its host
        return False
    theirs = parse_authority(parts.netloc)
    scheme = parts.scheme.lower()
    if ours is None or theirs is None or scheme not in DEFAULT_PORTS:
        return False
    return (scheme, theirs.name, theirs.port or DEFAULT_PORTS[scheme]) == origin(scope, ours)


def check_allowed(allowed: Iterable[str], setting: str = "allowed_hosts") -> tuple[str, ...]:
    """The patterns of ``allowed``, in lower case; a ``ConfigError`` naming ``setting`` for one
    that can never match a ``Host`` (a URL, a port, a list in one string)."""
    if isinstance(allowed, (str, bytes)):
        raise ConfigError(f"{setting} must be a list of host names, not one string: {allowed!r}")
    patterns = []
    for entry in allowed:
        pattern = entry.lower().rstrip(".") if isinstance(entry, str) else ""
        name = parse_authority(pattern[1:] if pattern.startswith(".") else pattern)
        if pattern != "*" and (name is None or name.port is not None):
            raise ConfigError(
                f"{setting} has {entry!r}: give host names or addresses (jobs.example.com, "
                "10.0.0.5, [::1]; .example.com for a domain and all below it; * for any), "
                "without a scheme, port or path"
            )
        patterns.append(pattern)
    return tuple(patterns)


def matches(name: str, pattern: str) -> bool:
    """Whether the host ``name`` fits ``pattern``, as Django's ``ALLOWED_HOSTS`` match."""
    if pattern == "*" or name == pattern:
        return True
    return pattern.startswith(".") and (name.endswith(pattern) or name == pattern[1:])


class Hosts:
    """The host names one dashboard answers to, and its check of each request's ``Host`` and
    ``Origin``.

    ``allowed`` adds to the loopback names; ``None`` means every name with a ``token``, none
    without.  ``setting`` is what a ``ConfigError`` for a bad entry calls ``allowed``."""

    def __init__(
        self, allowed: Iterable[str] | None, *, token: bool, setting: str = "allowed_hosts"
    ) -> None:
        if allowed is None:
            self.patterns: tuple[str, ...] = ("*",) if token else ()
        else:
            self.patterns = check_allowed(allowed, setting)

    def allows(self, name: str) -> bool:
        return is_loopback(name) or any(matches(name, pattern) for pattern in self.patterns)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why the request is refused (400: its ``Host``; 403: its ``Origin``), or ``None``."""
        authority = authority_of(scope)
        if authority is None:
            return 400, "Bad Request: the Host header is missing, repeated, or not a host[:port]"
        if not self.allows(authority.name):
            answers = "loopback names (localhost, 127.0.0.1, [::1])" + (
                f" and {', '.join(self.patterns)}" if self.patterns else " only"
            )
            return 400, (
                f"Bad Request: this dashboard does not answer to the host name "
                f"{authority.name}. It answers to {answers}: without a token, to loopback names "
                f"alone unless allowed_hosts adds others, so that no other site can reach it by "
                f"DNS rebinding. {HOW_TO_WIDEN}"
            )
        if scope.get("method") in SAFE_METHODS:
            return None
        origins = header_values(scope, b"origin")
        if len(origins) > 1 or (origins and not same_origin(scope, origins[0])):
            return 403, (
                "Forbidden: this request comes from another site (its Origin is not this "
                "dashboard's scheme, host and port); the dashboard takes forms from its own "
                "pages only"
            )
        return None
