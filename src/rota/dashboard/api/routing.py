"""How an API route runs: its scope checked, its body read, its façade calls made in a thread
as the caller, and every outcome (a ``RotaError`` included) answered as JSON."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rota.app import Rota
from rota.dashboard.api.auth import Access, Caller, caller_of
from rota.dashboard.api.replies import TooLarge, failure, http_problem, read_body
from rota.errors import RotaError
from rota.runtime.services.inspection import Inspection

logger = logging.getLogger("rota.dashboard")


@dataclass(frozen=True)
class Call:
    """What a route's handler gets: the façade, the path's and query's values, the body."""

    rota: Rota
    path: dict[str, Any]
    query: QueryParams
    body: dict[str, Any]

    @property
    def viewed(self) -> Inspection:
        """The reads of the namespace the query names (``namespace``), else of the app's."""
        return self.rota.inspect.of(self.query.get("namespace") or None)


Handler = Callable[[Call], Response]


def route(
    rota: Rota,
    path: str,
    handler: Handler,
    *,
    method: str = "GET",
    access: Access = Access.READ,
) -> Route:
    """A route of the API: ``handler`` runs for callers whose token has ``access``."""

    async def endpoint(request: Request) -> Response:
        caller = caller_of(request)
        if access is Access.OPERATE and caller.access is not Access.OPERATE:
            return http_problem(403, "this route needs a token with the operate scope")
        try:
            body = await read_body(request) if method != "GET" else {}
            call = Call(rota, dict(request.path_params), request.query_params, body)
            return await run_in_threadpool(acting, caller, handler, call)
        except TooLarge as error:
            return http_problem(413, str(error))
        except RotaError as error:
            return failure(error)
        except Exception:
            logger.exception("the API route %s %s failed", method, path)
            return http_problem(500, "the server failed to answer; its log says why")

    return Route(path, endpoint, methods=[method], name=f"{method} {path}")


def acting(caller: Caller, handler: Handler, call: Call) -> Response:
    """``handler``'s work, its changes recorded as the caller's; entered in the thread that
    runs it, so the actor does not depend on the pool copying context."""
    with call.rota.acting_as(caller.actor):
        return handler(call)


def routes(rota: Rota, table: Sequence[tuple[str, str, Access, Handler]]) -> list[Route]:
    """The routes of a table of ``(method, path, access, handler)``."""
    return [
        route(rota, path, handler, method=method, access=access)
        for method, path, access, handler in table
    ]
