"""The dashboard's routes: its pages, its actions, its login and its error pages.

``DashboardApp`` holds one dashboard's ``Rota``, keys and templates, and its methods are the
endpoints; ``create_app`` builds one and returns its Starlette app.  What the pages show is in
``rota.dashboard.views`` (a filtered jobs page in ``rota.dashboard.search_views``), a schedule's
page and its edits in ``rota.dashboard.editing``, bulk actions, replays and a job's edits in
``rota.dashboard.job_actions``, what ``/metrics`` says in ``rota.dashboard.metrics``; the
security choices are in ``rota.dashboard.security``, ``rota.dashboard.sessions`` and
``rota.dashboard.hosts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from rota.app import Rota
from rota.core.clock import Clock
from rota.dashboard import metrics, search_views, views
from rota.dashboard.api import api_app
from rota.dashboard.api.replies import http_problem
from rota.dashboard.editing import ScheduleEditing
from rota.dashboard.error_pages import ErrorPages
from rota.dashboard.hosts import Hosts
from rota.dashboard.job_actions import JobActions, job_id_of, job_page
from rota.dashboard.paths import base_path, here, is_api, referrer, route_path, safe_next
from rota.dashboard.rendering import Renderer
from rota.dashboard.security import (
    CSRF_FIELD,
    NO_STORE,
    SECURITY_HEADERS,
    Keys,
    Who,
    client_of,
    read_form,
)
from rota.dashboard.sessions import DEFAULT_MAX_AGE

STATIC = Path(__file__).parent / "static"

REFUSALS = {
    401: "Unauthorized: a dashboard token is required",
    429: "Too Many Requests: too many wrong tokens from your address; wait and try again",
}

Endpoint = Callable[[Request], Awaitable[Response]]
Work = Callable[[Request, dict[str, str]], Response | str | None]
"""An action's work: ``None`` when done, a refusal message, or the page to answer with."""


class DashboardApp:
    """One dashboard over ``rota``: its endpoints, and the Starlette app that routes to them."""

    def __init__(self, rota: Rota, keys: Keys, hosts: Hosts, api: Starlette | None = None) -> None:
        self.rota = rota
        self.api = api or api_app(rota, keys)
        self.keys = keys
        self.hosts = hosts
        self.renderer = Renderer(self.keys, rota.namespace)
        self.registry = metrics.registry(rota)
        self.editing = ScheduleEditing(rota, self.renderer)
        self.job_actions = JobActions(rota, self.renderer)

    # -- the guard -----------------------------------------------------------------------------

    async def guard(self, request: Request, call_next: Endpoint) -> Response:
        """Admits a request or refuses it (first by its ``Host`` and ``Origin``, then by its
        credentials), and keeps every answer out of caches."""
        refused = self.hosts.refusal(request.scope)
        if refused is None:
            response = await self.admit(request, call_next)
        elif is_api(request):
            response = http_problem(*refused)
        else:
            status, why = refused
            response = PlainTextResponse(f"{status} {why}\n", status, SECURITY_HEADERS)
        response.headers.update(NO_STORE)
        return response

    async def admit(self, request: Request, call_next: Endpoint) -> Response:
        """Requires the token or a session (when there is a token) on every path but
        ``/login``; the metrics token opens ``/metrics`` only.  The path is the one the router
        routes on (``paths.route_path``), never one rebuilt from headers."""
        relative = route_path(request.scope) or "/"
        if relative == "/login" or is_api(request):  # the API authenticates its own callers
            return await call_next(request)
        who = self.keys.identify(request)
        if who is Who.USER or (who is Who.SCRAPER and relative == "/metrics"):
            response = await call_next(request)
            self.keys.pair_csrf_cookie(request, response)
            return response
        return self.refuse(request, 429 if who is Who.THROTTLED else 401)

    def refuse(self, request: Request, status: int) -> Response:
        """A 401 or 429: the login form for a browser, a line of text for anything else."""
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return self.login_page(request, here(request), status)
        headers = self.refusal_headers(request, status)
        return PlainTextResponse(f"{status} {REFUSALS[status]}\n", status, headers)

    def refusal_headers(self, request: Request, status: int) -> dict[str, str]:
        """How to get in: the token (401), or wait so many seconds (429)."""
        if status == 401:
            return {"WWW-Authenticate": 'Bearer realm="rota"'}
        if status == 429:
            return {"Retry-After": str(self.keys.retry_after(request))}
        return {}

    def login_page(
        self, request: Request, target: str, status: int = 200, *, failed: bool = False
    ) -> Response:
        """The login form, saying when a token was refused, or for how long to wait (429)."""
        wait = self.keys.retry_after(request) if status == 429 else None
        context = {"next": target, "failed": failed, "retry_after": wait}
        response = self.renderer.render(request, "login.html", context, status)
        response.headers.update(self.refusal_headers(request, status))
        return response

    # -- pages (synchronous, so Starlette runs their database reads in its thread pool) --------

    def page(
        self, request: Request, template: str, build: Callable[[], dict[str, Any]]
    ) -> Response:
        """``template`` rendered with what ``build`` returns; a bad query is a 400 page."""
        try:
            context = build()
        except views.BadQuery as error:
            return self.renderer.error(request, 400, "Bad request", str(error))
        return self.renderer.render(request, template, context)

    def overview(self, request: Request) -> Response:
        return self.page(request, "overview.html", lambda: views.overview(self.rota))

    def jobs(self, request: Request) -> Response:
        return self.page(
            request, "jobs.html", lambda: search_views.jobs_page(self.rota, request.query_params)
        )

    def job(self, request: Request) -> Response:
        return self.page(request, "job.html", lambda: job_page(self.rota, job_id_of(request)))

    def schedules(self, request: Request) -> Response:
        return self.page(request, "schedules.html", lambda: views.schedules_page(self.rota))

    def workers(self, request: Request) -> Response:
        return self.page(request, "workers.html", lambda: views.workers_page(self.rota))

    def metrics(self, request: Request) -> Response:
        body, content_type = metrics.exposition(self.registry, request.headers.get("accept", ""))
        return Response(body, media_type=content_type)

    # -- actions -------------------------------------------------------------------------------

    def action(self, work: Work, back: str) -> Endpoint:
        """A POST endpoint: CSRF check, ``work`` (a refusal message, a page, or ``None``) acting
        as the caller, redirect.

        ``back``, a path inside the dashboard filled in from the path's parameters, is where the
        redirect goes when neither the form's ``next`` nor the Referer says where.
        """

        async def endpoint(request: Request) -> Response:
            fields = await read_form(request)
            if not self.keys.csrf_valid(request, fields.get(CSRF_FIELD, "")):
                return self.renderer.error(
                    request,
                    403,
                    "Forbidden",
                    "The form's CSRF token is missing or wrong. Reload the page and try again.",
                )
            fallback = base_path(request) + back.format_map(request.path_params)
            actor = f"dashboard:{self.keys.caller(request)}"
            outcome = await run_in_threadpool(self.acting, actor, work, request, fields)
            if isinstance(outcome, Response):
                return outcome
            if outcome is not None:
                return self.renderer.error(request, 409, "Not applicable", outcome)
            return RedirectResponse(referrer(request, fields.get("next", ""), fallback), 303)

        return endpoint

    def acting(
        self, actor: str, work: Work, request: Request, fields: dict[str, str]
    ) -> Response | str | None:
        """``work``, its changes recorded in schedules' histories as ``actor``; entered in the
        thread that runs it, so the actor does not depend on the pool copying context."""
        with self.rota.acting_as(actor):
            return work(request, fields)

    def retry(self, request: Request, form: dict[str, str]) -> str | None:
        job_id = job_id_of(request)
        if not self.rota.retry(job_id):
            state = self.rota.job(job_id).state.value
            return f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
        return None

    def cancel(self, request: Request, form: dict[str, str]) -> str | None:
        job_id = job_id_of(request)
        if not self.rota.cancel(job_id):
            return f"job {job_id} has already finished"
        return None

    def switch_job(self, request: Request, form: dict[str, str], *, pause: bool) -> str | None:
        job_id = job_id_of(request)
        if not (self.rota.pause(job_id) if pause else self.rota.resume(job_id)):
            state = self.rota.job(job_id).state.value
            return f"job {job_id} is {state}: only {'pending' if pause else 'paused'} jobs"
        return None

    def switch_queue(self, request: Request, form: dict[str, str], *, pause: bool) -> str | None:
        """The queue's name comes in the form, never in the path, so no name can be a path."""
        name = form.get("queue", "")
        if not (self.rota.pause_queue(name) if pause else self.rota.resume_queue(name)):
            return f"queue {name!r} is {'already' if pause else 'not'} paused"
        return None

    def pause_schedule(self, request: Request, form: dict[str, str]) -> str | None:
        name = str(request.path_params["name"])
        return None if self.rota.pause(name) else f"schedule {name!r} is not active"

    def resume_schedule(self, request: Request, form: dict[str, str]) -> str | None:
        name = str(request.path_params["name"])
        return None if self.rota.resume(name) else f"schedule {name!r} is not paused"

    def run_schedule(self, request: Request, form: dict[str, str]) -> str | None:
        self.rota.run_now(str(request.path_params["name"]))
        return None

    # -- login ---------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        """The login form, and its POST: a new session for the token, throttled per client."""
        home = f"{base_path(request)}/"
        if self.keys.token is None:
            return RedirectResponse(home, 303)
        if request.method == "GET":
            target = safe_next(request, request.query_params.get("next", ""), home)
            return self.login_page(request, target)
        fields = await read_form(request)
        if not self.keys.csrf_valid(request, fields.get(CSRF_FIELD, "")):
            return self.renderer.error(request, 403, "Forbidden", "The form's CSRF token is wrong.")
        target = safe_next(request, fields.get("next", ""), home)
        who = self.keys.attempt(client_of(request), fields.get("token", ""))
        if who is Who.THROTTLED:
            return self.login_page(request, target, 429)
        if who is not Who.USER:
            return self.login_page(request, target, 401, failed=True)
        response = RedirectResponse(target, 303)
        self.keys.log_in(request, response)
        return response

    async def logout(self, request: Request) -> Response:
        fields = await read_form(request)
        if not self.keys.csrf_valid(request, fields.get(CSRF_FIELD, "")):
            return self.renderer.error(request, 403, "Forbidden", "The form's CSRF token is wrong.")
        response = RedirectResponse(f"{base_path(request)}/login", 303)
        if self.keys.sessions is not None:
            self.keys.log_out(request, response)
        return response

    # -- the app -------------------------------------------------------------------------------

    def bulk_routes(self, post: Callable[[str, Work, str], Route]) -> list[Route]:
        """Each bulk action's confirmation page and its POST, at ``/bulk/<action>``."""
        routes = []
        for name in search_views.DONE:
            confirm = partial(self.job_actions.confirm, action=name)
            routes.append(Route(f"/bulk/{name}", confirm))
            routes.append(
                post(f"/bulk/{name}", partial(self.job_actions.bulk, action=name), "/jobs")
            )
        return routes

    def routes(self) -> list[BaseRoute]:
        def post(path: str, work: Work, back: str) -> Route:
            return Route(path, self.action(work, back), methods=["POST"])

        return [
            Route("/", self.overview),
            Route("/jobs", self.jobs),
            Route("/jobs/{job_id}", self.job),
            post("/jobs/{job_id}/retry", self.retry, "/jobs/{job_id}"),
            post("/jobs/{job_id}/cancel", self.cancel, "/jobs/{job_id}"),
            post("/jobs/{job_id}/pause", partial(self.switch_job, pause=True), "/jobs/{job_id}"),
            post("/jobs/{job_id}/resume", partial(self.switch_job, pause=False), "/jobs/{job_id}"),
            post("/jobs/{job_id}/replay", self.job_actions.replay, "/jobs/{job_id}"),
            post("/jobs/{job_id}/edit", self.job_actions.edit, "/jobs/{job_id}"),
            Route("/bulk", self.job_actions.history),
            *self.bulk_routes(post),
            post("/queues/pause", partial(self.switch_queue, pause=True), "/"),
            post("/queues/resume", partial(self.switch_queue, pause=False), "/"),
            Route("/schedules", self.schedules),
            Route("/preview", self.editing.preview),
            Route("/schedules/{name:path}", self.editing.page),
            post("/schedules/{name:path}/edit", self.editing.save, "/schedules"),
            post("/schedules/{name:path}/reset", self.editing.reset, "/schedules"),
            post("/schedules/{name:path}/pause", self.pause_schedule, "/schedules"),
            post("/schedules/{name:path}/resume", self.resume_schedule, "/schedules"),
            post("/schedules/{name:path}/run-now", self.run_schedule, "/schedules"),
            Route("/workers", self.workers),
            Route("/metrics", self.metrics),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
            Mount("/api", self.api),
        ]

    def starlette(self) -> Starlette:
        return Starlette(
            routes=self.routes(),
            middleware=[Middleware(BaseHTTPMiddleware, dispatch=self.guard)],
            exception_handlers=ErrorPages(self.renderer).handlers(),
        )


def create_app(
    rota: Rota,
    *,
    token: str | None = None,
    metrics_token: str | None = None,
    session_max_age: timedelta | float = DEFAULT_MAX_AGE,
    clock: Clock | None = None,
    allowed_hosts: Iterable[str] | None = None,
    api_tokens: Mapping[str, str] | None = None,
) -> Starlette:
    """A Starlette (ASGI) app serving the dashboard of ``rota``; mount it anywhere.

    ``token`` (at least 16 characters) is required by every page, as a Bearer header or
    through the login form, whose sessions last ``session_max_age`` (12 hours unless given, in
    seconds or a ``timedelta``).  ``token=None``, the default, means no login: serve it on
    loopback only.  ``metrics_token`` opens ``/metrics`` (``Authorization: Bearer``) and no
    other page, for Prometheus.  Sessions and the login throttle read the time from ``clock``
    (``rota.clock`` unless given).  A token that is empty or too short raises ``ConfigError``.

    It answers to loopback host names (``localhost``, ``127.0.0.1``, ``[::1]``) and to those
    ``allowed_hosts`` adds (``jobs.example.com``, ``.example.com`` for a domain, ``*`` for any),
    any other ``Host`` getting 400; with a token and no ``allowed_hosts``, to any host name.  A
    POST whose ``Origin`` is not the dashboard's own gets 403 (``rota.dashboard.hosts``).

    The JSON API at ``/api`` (``rota.dashboard.api``) takes only ``Authorization: Bearer``:
    ``token`` with the ``operate`` scope, and ``api_tokens`` (each token to ``"read"`` or
    ``"operate"``), which open nothing else.

    >>> app.mount("/rota", create_app(rota, token=os.environ["ROTA_DASHBOARD_TOKEN"]))
    """
    keys = Keys(
        token,
        metrics_token=metrics_token,
        session_max_age=session_max_age,
        clock=clock or rota.clock,
    )
    hosts = Hosts(allowed_hosts, token=keys.token is not None)
    return DashboardApp(rota, keys, hosts, api_app(rota, keys, api_tokens)).starlette()
