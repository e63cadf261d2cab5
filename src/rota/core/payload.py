"""Job arguments as versioned JSON: validated when queued, never pickled, readable by SQL."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rota.errors import InvalidArguments

PAYLOAD_VERSION = 1
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024


class Arguments(NamedTuple):
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    trace: str | None = None
    """W3C ``traceparent`` of the span that enqueued the job, when tracing is on."""


def encode(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    trace: str | None = None,
) -> str:
    """Serialise arguments, raising ``InvalidArguments`` that names the offending one."""
    for name in kwargs:
        if not isinstance(name, str):
            raise InvalidArguments(f"keyword argument names must be strings, got {name!r}")
    try:
        data = {"v": PAYLOAD_VERSION, "args": list(args), "kwargs": dict(kwargs)}
        if trace:
            data["trace"] = trace
        text = json.dumps(
            data,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        _name_the_culprit(args, kwargs)
        raise InvalidArguments(f"arguments are not JSON-serialisable: {exc}") from exc
    size = len(text.encode())
    if size > max_bytes:
        raise InvalidArguments(f"arguments are {size} bytes as JSON, over the {max_bytes} limit")
    return text


def decode(text: str) -> Arguments:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("v") != PAYLOAD_VERSION:
        raise InvalidArguments(f"unsupported job payload: {text[:80]!r}")
    return Arguments(tuple(data["args"]), dict(data["kwargs"]), data.get("trace"))


def _name_the_culprit(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    for position, value in enumerate(args):
        _check(value, f"positional argument {position}")
    for name, value in kwargs.items():
        _check(value, f"keyword argument {name!r}")


def _check(value: Any, where: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArguments(
            f"{where} is not JSON-serialisable ({type(value).__name__}): {exc}"
        ) from exc
