"""The dashboard's routes, its optional token login, and CSRF protection of its actions.

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
  supplies, so an action cannot become an open redirect.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rota.app import Rota
from rota.dashboard import views
from rota.display import span, took, when
from rota.errors import InvalidArguments, JobNotFound, RotaError, ScheduleNotFound, StoreError

HERE = Path(__file__).parent
SESSION_COOKIE = "rota_session"
CSRF_COOKIE = "rota_csrf"
CSRF_FIELD = "csrf_token"
MAX_FORM_BYTES = 16_384
MAX_FORM_FIELDS = 50


class Dashboard:
    """The state one dashboard app holds: the ``Rota``, its secrets and its templates."""

    def __init__(self, rota: Rota, token: str | None) -> None:
        self.rota = rota
        self.token = token or None
        self.csrf_secret = secrets.token_bytes(32)
        self.session_value = (
            hmac.new(self.token.encode(), b"rota-dashboard-session", hashlib.sha256).hexdigest()
            if self.token
            else None
        )
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(enabled_extensions=("html",), default=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(when=when, age=span, took=took)

    # -- authentication ------------------------------------------------------------------------

    def authenticated(self, request: Request) -> bool:
        if self.token is None:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), self.token.encode()
        ):
            return True
        cookie = request.cookies.get(SESSION_COOKIE, "")
        assert self.session_value is not None
        return hmac.compare_digest(cookie.encode(), self.session_value.encode())

    # -- CSRF ----------------------------------------------------------------------------------

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self.csrf_secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_valid(self, request: Request, submitted: str) -> bool:
        nonce = request.cookies.get(CSRF_COOKIE, "")
        if not nonce or not submitted:
            return False
        return hmac.compare_digest(self.csrf_token(nonce).encode(), submitted.encode())

    # -- rendering -----------------------------------------------------------------------------

    def render(
        self, request: Request, template: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        """A page, with the CSRF token its forms embed (and the cookie it pairs with)."""
        nonce = request.cookies.get(CSRF_COOKIE) or ""
        fresh = not nonce
        if fresh:
            nonce = secrets.token_urlsafe(32)
        base = base_path(request)
        html = self.templates.get_template(template).render(
            **context,
            base=base,
            path=request.url.path,
            here=here(request),
            csrf_field=CSRF_FIELD,
            csrf_token=self.csrf_token(nonce),
            auth_enabled=self.token is not None,
        )
        response = HTMLResponse(html, status_code=status)
        response.headers.update(SECURITY_HEADERS)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE,
                nonce,
                path=base or "/",
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
        return response

    def error(self, request: Request, status: int, title: str, message: str) -> Response:
        return self.render(request, "error.html", {"title": title, "message": message}, status)


SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


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


class Guard(BaseHTTPMiddleware):
    """Requires the token (when set) on every path but ``/login``."""

    def __init__(self, app: Any, dashboard: Dashboard) -> None:
        super().__init__(app)
        self.dashboard = dashboard

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        relative = request.url.path[len(base_path(request)) :] or "/"
        if relative == "/login" or self.dashboard.authenticated(request):
            return await call_next(request)
        headers = {"WWW-Authenticate": 'Bearer realm="rota"'}
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            response = self.dashboard.render(
                request, "login.html", {"next": here(request), "failed": False}, 401
            )
            response.headers.update(headers)
            return response
        return PlainTextResponse("401 Unauthorized: a dashboard token is required\n", 401, headers)


def create_app(rota: Rota, *, token: str | None = None) -> Starlette:
    """A Starlette (ASGI) app serving the dashboard of ``rota``; mount it anywhere.

    >>> app.mount("/rota", create_app(rota, token=os.environ["ROTA_DASHBOARD_TOKEN"]))
    """
    dashboard = Dashboard(rota, token)

    def page(template: str, build: Callable[[Request], dict[str, Any]]) -> Callable[..., Any]:
        def endpoint(request: Request) -> Response:
            try:
                context = build(request)
            except views.BadQuery as error:
                return dashboard.error(request, 400, "Bad request", str(error))
            return dashboard.render(request, template, context)

        return endpoint

    def jobs_context(request: Request) -> dict[str, Any]:
        query = views.parse_jobs_query(request.query_params, request.query_params.getlist("state"))
        return views.jobs_page(rota, query)

    def job_context(request: Request) -> dict[str, Any]:
        job_id = views.parse_job_id(str(request.path_params["job_id"]))
        if job_id is None:
            raise JobNotFound(f"job {request.path_params['job_id']} does not exist")
        return views.job_detail(rota, job_id)

    def metrics(request: Request) -> Response:
        return PlainTextResponse(
            views.metrics(rota), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def form_of(request: Request) -> dict[str, str]:
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

    def action(
        work: Callable[[Request], str | None], fallback: Callable[[Request], str]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A POST endpoint: CSRF check, ``work`` (a refusal message or ``None``), redirect."""

        async def endpoint(request: Request) -> Response:
            fields = await form_of(request)
            if not dashboard.csrf_valid(request, fields.get(CSRF_FIELD, "")):
                return dashboard.error(
                    request,
                    403,
                    "Forbidden",
                    "The form's CSRF token is missing or wrong. Reload the page and try again.",
                )
            back = fallback(request)
            request.state.form = fields
            refusal = await run_in_threadpool(work, request)
            if refusal is not None:
                return dashboard.error(request, 409, "Not applicable", refusal)
            return RedirectResponse(referrer(request, fields.get("next", ""), back), 303)

        return endpoint

    def job_id_of(request: Request) -> int:
        job_id = views.parse_job_id(str(request.path_params["job_id"]))
        if job_id is None:
            raise JobNotFound(f"job {request.path_params['job_id']} does not exist")
        return job_id

    def retry(request: Request) -> str | None:
        job_id = job_id_of(request)
        if not rota.retry(job_id):
            state = rota.job(job_id).state.value
            return f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
        return None

    def cancel(request: Request) -> str | None:
        job_id = job_id_of(request)
        if not rota.cancel(job_id):
            return f"job {job_id} has already finished"
        return None

    def job_switch(pause: bool) -> Callable[[Request], str | None]:
        def work(request: Request) -> str | None:
            job_id = job_id_of(request)
            if not (rota.pause(job_id) if pause else rota.resume(job_id)):
                state = rota.job(job_id).state.value
                return f"job {job_id} is {state}: only {'pending' if pause else 'paused'} jobs"
            return None

        return work

    def queue_switch(pause: bool) -> Callable[[Request], str | None]:
        """The queue's name comes in the form, never in the path, so no name can be a path."""

        def work(request: Request) -> str | None:
            name = request.state.form.get("queue", "")
            if not (rota.pause_queue(name) if pause else rota.resume_queue(name)):
                return f"queue {name!r} is {'already' if pause else 'not'} paused"
            return None

        return work

    def schedule_action(verb: str) -> Callable[[Request], str | None]:
        def work(request: Request) -> str | None:
            name = str(request.path_params["name"])
            if verb == "pause" and not rota.pause(name):
                return f"schedule {name!r} is not active"
            if verb == "resume" and not rota.resume(name):
                return f"schedule {name!r} is not paused"
            if verb == "run-now":
                rota.run_now(name)
            return None

        return work

    def job_page(request: Request) -> str:
        return f"{base_path(request)}/jobs/{request.path_params['job_id']}"

    def overview_page(request: Request) -> str:
        return f"{base_path(request)}/"

    def schedules_page(request: Request) -> str:
        return f"{base_path(request)}/schedules"

    async def login(request: Request) -> Response:
        if dashboard.token is None:
            return RedirectResponse(f"{base_path(request)}/", 303)
        home = f"{base_path(request)}/"
        if request.method == "GET":
            target = safe_next(request, request.query_params.get("next", ""), home)
            return dashboard.render(request, "login.html", {"next": target, "failed": False})
        fields = await form_of(request)
        if not dashboard.csrf_valid(request, fields.get(CSRF_FIELD, "")):
            return dashboard.error(request, 403, "Forbidden", "The form's CSRF token is wrong.")
        target = safe_next(request, fields.get("next", ""), home)
        given = fields.get("token", "").encode()
        if not hmac.compare_digest(given, dashboard.token.encode()):
            return dashboard.render(request, "login.html", {"next": target, "failed": True}, 401)
        response = RedirectResponse(target, 303)
        assert dashboard.session_value is not None
        response.set_cookie(
            SESSION_COOKIE,
            dashboard.session_value,
            path=base_path(request) or "/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(request: Request) -> Response:
        fields = await form_of(request)
        if not dashboard.csrf_valid(request, fields.get(CSRF_FIELD, "")):
            return dashboard.error(request, 403, "Forbidden", "The form's CSRF token is wrong.")
        response = RedirectResponse(f"{base_path(request)}/login", 303)
        response.delete_cookie(SESSION_COOKIE, path=base_path(request) or "/")
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, LookupError) else "There is no such page."
        return dashboard.error(request, 404, "Not found", message)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return await not_found(request, exc)
        title = {405: "Method not allowed", 413: "Too large"}.get(exc.status_code, "Error")
        response = dashboard.error(request, exc.status_code, title, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    async def bad_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RotaError)
        return dashboard.error(request, 400, "Bad request", f"{exc.code}: {exc}")

    async def store_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RotaError)
        return dashboard.error(
            request,
            503,
            "Database unavailable",
            f"{exc.code}: {exc}. Try again shortly; if rota's tables are missing, run "
            "`rota migrate`.",
        )

    routes = [
        Route("/", page("overview.html", lambda request: views.overview(rota))),
        Route("/jobs", page("jobs.html", jobs_context)),
        Route("/jobs/{job_id}", page("job.html", job_context)),
        Route("/jobs/{job_id}/retry", action(retry, job_page), methods=["POST"]),
        Route("/jobs/{job_id}/cancel", action(cancel, job_page), methods=["POST"]),
        Route("/jobs/{job_id}/pause", action(job_switch(True), job_page), methods=["POST"]),
        Route("/jobs/{job_id}/resume", action(job_switch(False), job_page), methods=["POST"]),
        Route("/queues/pause", action(queue_switch(True), overview_page), methods=["POST"]),
        Route("/queues/resume", action(queue_switch(False), overview_page), methods=["POST"]),
        Route("/schedules", page("schedules.html", lambda request: views.schedules_page(rota))),
        Route(
            "/schedules/{name:path}/pause",
            action(schedule_action("pause"), schedules_page),
            methods=["POST"],
        ),
        Route(
            "/schedules/{name:path}/resume",
            action(schedule_action("resume"), schedules_page),
            methods=["POST"],
        ),
        Route(
            "/schedules/{name:path}/run-now",
            action(schedule_action("run-now"), schedules_page),
            methods=["POST"],
        ),
        Route("/workers", page("workers.html", lambda request: views.workers_page(rota))),
        Route("/metrics", metrics),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: http_error,
        JobNotFound: not_found,
        ScheduleNotFound: not_found,
        InvalidArguments: bad_request,
        StoreError: store_error,
    }
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, dashboard=dashboard)],
        exception_handlers=handlers,
    )
