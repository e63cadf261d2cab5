"""Where a dashboard request is and where its answer may send the browser.

The dashboard can be mounted under any prefix, so every link and cookie path is built from the
mount point, and every redirect target is checked to stay inside it: a form's ``next`` or a
``Referer`` is user input, and following it blindly would make each action an open redirect.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request


def base_path(request: Request) -> str:
    """Where the dashboard is mounted ("" at the root), so links work under any prefix."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def here(request: Request) -> str:
    """This page's path and query, where an action on it redirects back to."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def safe_next(request: Request, candidate: str, fallback: str) -> str:
    """``candidate`` if it is a path inside the dashboard, else ``fallback``."""
    base = base_path(request)
    parts = urlsplit(candidate)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return fallback
    if candidate.startswith("//") or "\\" in candidate:
        return fallback
    if base and not (parts.path == base or parts.path.startswith(base + "/")):
        return fallback
    return parts.path + (f"?{parts.query}" if parts.query else "")


def referrer(request: Request, form_next: str, fallback: str) -> str:
    """Where to go after an action: the form's ``next``, else a same-origin Referer."""
    if form_next:
        return safe_next(request, form_next, fallback)
    referer = request.headers.get("referer", "")
    parts = urlsplit(referer)
    if referer and parts.netloc == request.url.netloc:
        return safe_next(request, parts.path + (f"?{parts.query}" if parts.query else ""), fallback)
    return fallback
