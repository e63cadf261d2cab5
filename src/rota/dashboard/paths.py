"""Where a dashboard request is and where its answer may send the browser.

Everything here is read from the ASGI scope the server built (``path``, ``root_path``,
``query_string``), never from ``request.url``: Starlette builds that URL from the ``Host``
header, which the client writes, so a ``Host`` such as ``x/login?`` would move the path it
reports (Starlette before 1.0.1 did not check it), and the guard would judge a path the router
does not serve.

The dashboard can be mounted under any prefix, so every link and cookie path is built from the
mount point, and every redirect target is checked to stay inside it: a form's ``next`` or a
``Referer`` is user input, and following it blindly would make each action an open redirect.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.types import Scope

from rota.dashboard.hosts import same_origin

PATH_SAFE = "/:@!$&'()*+,;="
"""What ``here`` leaves as it is in a path: the characters a path segment may hold unescaped."""


def base_path(request: Request) -> str:
    """Where the dashboard is mounted ("" at the root), so links work under any prefix."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def route_path(scope: Scope) -> str:
    """The path inside the dashboard, as Starlette's router matches it: the scope's ``path``
    relative to its ``root_path`` ("" for the mount point itself)."""
    path, root = str(scope["path"]), str(scope.get("root_path", ""))
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path


def is_api(request: Request) -> bool:
    """Whether the request is for the JSON API (``/api`` and below), which answers every
    error as JSON, even one for a path its router cannot match."""
    return (route_path(request.scope) + "/").startswith("/api/")


def here(request: Request) -> str:
    """This page's path (percent-encoded again) and query, where an action on it redirects
    back to."""
    query = bytes(request.scope.get("query_string", b"")).decode("latin-1")
    return quote(str(request.scope["path"]), safe=PATH_SAFE) + (f"?{query}" if query else "")


def safe_next(request: Request, candidate: str, fallback: str) -> str:
    """``candidate`` if it is a path inside the dashboard, else ``fallback``."""
    base = base_path(request)
    try:
        parts = urlsplit(candidate)
    except ValueError:  # an unclosed [ in what would be its host
        return fallback
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return fallback
    if candidate.startswith("//") or "\\" in candidate:
        return fallback
    if base and not (parts.path == base or parts.path.startswith(base + "/")):
        return fallback
    return parts.path + (f"?{parts.query}" if parts.query else "")


def referrer(request: Request, form_next: str, fallback: str) -> str:
    """Where to go after an action: the form's ``next``, else a Referer of the dashboard's own
    origin (``hosts.same_origin``)."""
    if form_next:
        return safe_next(request, form_next, fallback)
    referer = request.headers.get("referer", "")
    if not same_origin(request.scope, referer):
        return fallback
    parts = urlsplit(referer)
    return safe_next(request, parts.path + (f"?{parts.query}" if parts.query else ""), fallback)
