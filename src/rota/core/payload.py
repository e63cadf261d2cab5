"""Job arguments as versioned JSON: validated when queued, never pickled, readable by SQL."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rota.errors import InvalidArguments

PAYLOAD_VERSION = 1
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
MAX_NESTING = 100
"""Deepest nesting of lists and objects in one argument, as Ruby's JSON (and so Sidekiq) allows.

Python's ``json`` gives up near the interpreter's recursion limit, and how near depends on how
deep the caller's stack already is: an argument nested 990 levels deep can be encoded when
queued and then fail to decode in a worker.  A fixed, far lower bound is refused up front.
"""
_ENVELOPE_NESTING = 2  # the payload object and its "args" list
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""One encoder for every payload: ``json.dumps`` with options builds a new one per call."""


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
        text = _ENCODER.encode(data)
    except (TypeError, ValueError, RecursionError) as exc:
        _name_the_culprit(args, kwargs)
        raise InvalidArguments(f"arguments are not JSON-serialisable: {exc}") from exc
    if text.count("[") + text.count("{") > MAX_NESTING + _ENVELOPE_NESTING:
        _check_nesting(args, kwargs)
    try:
        size = len(text.encode())
    except UnicodeEncodeError as exc:
        _name_the_culprit(args, kwargs)
        raise InvalidArguments(f"arguments are not valid Unicode text: {exc}") from exc
    if size > max_bytes:
        raise InvalidArguments(f"arguments are {size} bytes as JSON, over the {max_bytes} limit")
    return text


def decode(text: str) -> Arguments:
    """The arguments of a stored payload; anything else is ``InvalidArguments``, never a crash."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArguments(f"unreadable job payload: {str(text)[:80]!r}") from exc
    if (
        not isinstance(data, dict)
        or data.get("v") != PAYLOAD_VERSION
        or not isinstance(data.get("args"), list)
        or not isinstance(data.get("kwargs"), dict)
    ):
        raise InvalidArguments(f"unsupported job payload: {text[:80]!r}")
    trace = data.get("trace")
    return Arguments(
        tuple(data["args"]), dict(data["kwargs"]), trace if isinstance(trace, str) else None
    )


def _arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(f"positional argument {position}", value) for position, value in enumerate(args)] + [
        (f"keyword argument {name!r}", value) for name, value in kwargs.items()
    ]


def _name_the_culprit(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    for name in kwargs:
        _check_text(name, f"keyword argument name {name!r}")
    for where, value in _arguments(args, kwargs):
        _check(value, where)


def _check(value: Any, where: str) -> None:
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except RecursionError as exc:
        raise InvalidArguments(f"{where} is nested more than {MAX_NESTING} levels deep") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidArguments(
            f"{where} is not JSON-serialisable ({type(value).__name__}): {exc}"
        ) from exc
    _check_text(text, where)


def _check_text(text: str, where: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise InvalidArguments(
            f"{where} is not valid Unicode text: it holds the lone surrogate "
            f"{text[exc.start : exc.end]!r}"
        ) from exc


def _check_nesting(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Only reached when the JSON has many brackets."""
    for where, value in _arguments(args, kwargs):
        if nested_deeper(value, MAX_NESTING):
            raise InvalidArguments(f"{where} is nested more than {MAX_NESTING} levels deep")


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep; walked
    without recursion (arguments, and handlers' results, are checked with it)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
