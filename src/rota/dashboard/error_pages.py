"""The dashboard's error pages: what a missing job, a bad query, an unreachable database or a
failure of the dashboard itself answers (the API answers its own, as JSON)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from rota.dashboard.api.replies import http_problem
from rota.dashboard.paths import is_api
from rota.dashboard.rendering import Renderer
from rota.dashboard.security import NO_STORE, SECURITY_HEADERS
from rota.errors import InvalidArguments, JobNotFound, RotaError, ScheduleNotFound, StoreError


class ErrorPages:
    """The exception handlers of the dashboard's app."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer

    def handlers(self) -> dict[Any, Callable[[Request, Exception], Awaitable[Response]]]:
        return {
            HTTPException: self.http_error,
            JobNotFound: self.not_found,
            ScheduleNotFound: self.not_found,
            InvalidArguments: self.bad_request,
            StoreError: self.store_error,
            Exception: self.server_error,
        }

    async def not_found(self, request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, LookupError) else "There is no such page."
        return self.renderer.error(request, 404, "Not found", message)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if is_api(request):  # a path under /api that the API's mount cannot match
            return http_problem(exc.status_code, str(exc.detail), exc.headers)
        if exc.status_code == 404:
            return await self.not_found(request, exc)
        title = {405: "Method not allowed", 413: "Too large"}.get(exc.status_code, "Error")
        response = self.renderer.error(request, exc.status_code, title, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    async def server_error(self, request: Request, exc: Exception) -> Response:
        """A bare 500: the templates may be what failed.  It is sent from outside the guard,
        so it carries the headers itself."""
        return PlainTextResponse(
            "500 Internal Server Error\n", 500, {**SECURITY_HEADERS, **NO_STORE}
        )

    async def bad_request(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RotaError)
        return self.renderer.error(request, 400, "Bad request", f"{exc.code}: {exc}")

    async def store_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RotaError)
        return self.renderer.error(
            request,
            503,
            "Database unavailable",
            f"{exc.code}: {exc}. Try again shortly; if rota's tables are missing, run "
            "`rota migrate`.",
        )
