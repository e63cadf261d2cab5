"""What the HTTP API answers, and how it reads what it is sent.

Every answer is JSON.  An error is ``{"error": {"code": ..., "message": ...}}``: the code is
the ``RotaError``'s own when a façade call raised one, otherwise one of the few HTTP-level codes
below (``UNAUTHORIZED``, ``FORBIDDEN``, ...), and ``STATUS`` is the one table of which status
each code gets.  Bad input is always a 4xx naming what is wrong, never a 500, so request bodies
and query values are checked here, by type, before a façade call sees them; the façade then
checks their values as it does for Python callers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from rota.core.names import name_problem
from rota.errors import ErrorCode, InvalidArguments, RotaError

STATUS: dict[str, int] = {
    ErrorCode.INVALID_ARGUMENTS: 400,
    ErrorCode.INVALID_CRON: 400,
    ErrorCode.INVALID_TIMEZONE: 400,
    ErrorCode.JOB_NOT_FOUND: 404,
    ErrorCode.SCHEDULE_NOT_FOUND: 404,
    ErrorCode.TASK_NOT_REGISTERED: 404,
    ErrorCode.SCHEDULE_CONFLICT: 409,
    ErrorCode.DATABASE_UNAVAILABLE: 503,
    ErrorCode.TRANSIENT_STORE_ERROR: 503,
    ErrorCode.STORE_ERROR: 503,
    ErrorCode.SERVER_READ_ONLY: 503,
    # HTTP-level codes: no RotaError has them.
    "BAD_REQUEST": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "PAYLOAD_TOO_LARGE": 413,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL_ERROR": 500,
}
"""The status of each error code; a ``RotaError`` code absent here is a 500."""
HTTP_CODES = {STATUS[code]: code for code in STATUS if not isinstance(code, ErrorCode)}
"""The code of an HTTP-level refusal, by its status (the router's 404 and 405, the guard's)."""
MAX_BODY_BYTES = 4 * 1024 * 1024
"""A job's arguments are at most ``max_payload_bytes`` (1 MiB by default) once encoded; a body
may escape them, so it gets room for that and more, and no more than that."""
NOSNIFF = {"X-Content-Type-Options": "nosniff"}


def reply(data: object, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status, NOSNIFF)


def problem(code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The error answer for ``code``, with its status from ``STATUS``."""
    body = {"error": {"code": str(code), "message": message}}
    return JSONResponse(body, STATUS.get(code, 500), {**NOSNIFF, **(headers or {})})


def failure(error: RotaError) -> JSONResponse:
    return problem(error.code, str(error))


def http_problem(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An HTTP-level refusal (no ``RotaError`` behind it) as an error answer."""
    code = HTTP_CODES.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL_ERROR")
    return problem(code, message, headers)


class TooLarge(Exception):
    """A body longer than ``MAX_BODY_BYTES``."""


def _no_constant(text: str) -> float:
    raise ValueError(f"{text} is not JSON")


async def read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body): ``InvalidArguments`` if it is not
    JSON (``NaN`` and ``Infinity`` aside) or not an object; ``TooLarge`` past the limit,
    whatever ``Content-Length`` claims."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise TooLarge(f"a request body has at most {MAX_BODY_BYTES} bytes")
    if not body.strip():
        return {}
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise InvalidArguments(f"the body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise InvalidArguments(f"the body must be a JSON object, got {json_type(data)}")
    return data


def json_type(value: object) -> str:
    """``value``'s JSON type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def only(body: Mapping[str, Any], allowed: frozenset[str]) -> None:
    """Refuse a body with members the route does not know (a typo must not be ignored)."""
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidArguments(
            f"unknown member {unknown[0]!r}; this body takes {', '.join(sorted(allowed))}"
        )


def typed(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``body[key]`` if present, of JSON type ``what`` (``None`` if absent or null)."""
    value = body.get(key)
    if value is None:
        return None
    wrong = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
    if wrong or not isinstance(value, kind):
        raise InvalidArguments(f"{key} must be {what}, got {json_type(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArguments(f"{key} must be finite")
    return value


def moment(text: str, key: str) -> datetime:
    """An ISO 8601 date-time with its UTC offset (``Z`` or ``+hh:mm``)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidArguments(f"{key} must be an ISO 8601 date-time, got {text[:40]!r}") from None
    if value.tzinfo is None:
        raise InvalidArguments(f"{key} must give its UTC offset (Z or +hh:mm), got {text[:40]!r}")
    return value


def whole(text: str | None, key: str, default: int, low: int, high: int) -> int:
    """A query value that is an integer from ``low`` to ``high``."""
    if text is None or not text.strip():
        return default
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 10:
        raise InvalidArguments(f"{key} must be a whole number from {low} to {high}")
    value = int(digits)
    if not low <= value <= high:
        raise InvalidArguments(f"{key} must be a whole number from {low} to {high}, got {value}")
    return value


def name(text: str | None, kind: str) -> str | None:
    """A task, queue or schedule name from a query or path, checked as the façade checks it."""
    if text is None or text == "":
        return None
    why = name_problem(kind, text)
    if why is not None:
        raise InvalidArguments(why)
    return text
