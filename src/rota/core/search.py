"""What finding jobs and acting on many of them is made of: the ``Filter`` a search or a bulk
action takes, the ``Page`` it returns and its keyset cursor, and the rules of tags and metadata.

Pure: the store turns a ``Filter`` into SQL, each field but ``args_match`` onto an index; the
argument match is decided here, on the decoded arguments of rows the other fields bounded.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from typing import Any, TypedDict

from rota.core import checks
from rota.core.model import MAX_JOB_ID, Job, JobState
from rota.core.names import check_name
from rota.errors import InvalidArguments

MAX_TAGS = 20
"""Tags one job may carry: each is a row of the tags table, written with the job."""
MAX_META_BYTES = 4096
"""``meta`` is shown with the job and kept beside it, not a second payload."""
MAX_PAGE = 1000
"""Jobs one ``find`` returns at most."""
ARGS_SCANNED = 10_000
"""Rows one ``find`` with ``args_match`` reads at most: the match runs on decoded arguments, so
it is bounded by the other filters and by this; a page that reached it ends early, its cursor
going on from the last row read."""
BULK_BATCH = 1000
"""Jobs a bulk action changes per transaction: short locks beside running workers."""

_STEP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\[\d+\]")
_PATH = re.compile(r"(\$\.)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*")


class FilterFields(TypedDict, total=False):
    """``Rota.find``'s and ``Filter``'s keywords."""

    state: str | Sequence[str] | None
    task: str | Sequence[str] | None
    queue: str | Sequence[str] | None
    tags: Sequence[str] | None
    schedule: str | None
    namespace: str | None
    error_code: str | None
    created_after: datetime | None
    created_before: datetime | None
    finished_after: datetime | None
    finished_before: datetime | None
    args_match: str | tuple[str, Any] | None


@dataclass(frozen=True)
class Filter:
    """Which jobs a search or a bulk action reaches; every field given must hold (``tags``:
    the job carries every tag named).  ``state``, ``task`` and ``queue`` take one value or
    several (any of them); ``namespace`` defaults to the caller's own; ``args_match`` is a
    substring of the arguments' JSON or a ``(path, value)`` pair (``"kwargs.to"``,
    ``"args[0]"``) whose argument must equal ``value``.

    >>> rota.find(Filter(state="failed", tags=["tenant:acme"], error_code="TIMEOUT"))
    """

    state: tuple[JobState, ...] = ()
    task: tuple[str, ...] = ()
    queue: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    schedule: str | None = None
    namespace: str | None = None
    error_code: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    finished_after: datetime | None = None
    finished_before: datetime | None = None
    args_match: str | tuple[str, Any] | None = None

    def __init__(self, **given: Any) -> None:
        unknown = set(given) - {field.name for field in fields(Filter)}
        if unknown:
            raise InvalidArguments(f"a filter has no field {sorted(unknown)[0]!r}")
        checked: dict[str, Any] = {
            "state": _states(given.get("state")),
            "task": _names("task", given.get("task")),
            "queue": _names("queue", given.get("queue")),
            "tags": check_tags(given.get("tags")),
            "schedule": _one("schedule", given.get("schedule")),
            "namespace": _one("namespace", given.get("namespace")),
            "error_code": _code(given.get("error_code")),
            "args_match": _args_match(given.get("args_match")),
        }
        for bound in ("created_after", "created_before", "finished_after", "finished_before"):
            value = given.get(bound)
            checked[bound] = (
                None if value is None else checks.moment(value, InvalidArguments, bound)
            )
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def empty(self) -> bool:
        """No field given: every job of the namespace matches."""
        return self == Filter()

    def to_json(self) -> dict[str, Any]:
        """The fields given, as JSON (recorded with a bulk action, sent by the HTTP API)."""
        data: dict[str, Any] = {}
        for name, value in asdict(self).items():
            if value in (None, ()):
                continue
            if isinstance(value, datetime):
                value = value.isoformat()
            elif name == "state":
                value = [state.value for state in value]
            elif isinstance(value, tuple):
                value = list(value)
            data[name] = value
        return data

    @classmethod
    def from_json(cls, data: object) -> Filter:
        """A filter from ``to_json``'s shape; ``InvalidArguments`` for anything else."""
        if not isinstance(data, Mapping):
            raise InvalidArguments(f"a filter is a JSON object, got {type(data).__name__}")
        given = dict(data)
        for bound in ("created_after", "created_before", "finished_after", "finished_before"):
            if isinstance(given.get(bound), str):
                given[bound] = _instant(bound, given[bound])
        match = given.get("args_match")
        if isinstance(match, list):
            given["args_match"] = tuple(match)
        return cls(**given)


@dataclass(frozen=True)
class Page:
    """One page of ``Rota.find``: jobs newest first, and the cursor of the next page (``None``
    on the last).  With ``args_match`` a page may hold fewer jobs than asked before the last."""

    jobs: list[Job]
    next_cursor: str | None


def check_tags(given: object) -> tuple[str, ...]:
    """Tags as stored: names' rules, each once, in the order given, at most ``MAX_TAGS``."""
    if given is None:
        return ()
    if isinstance(given, str) or not isinstance(given, (list, tuple, set, frozenset)):
        raise InvalidArguments(f"tags is a list of strings, got {type(given).__name__}")
    tags = tuple(dict.fromkeys(check_name("tag", tag, InvalidArguments) for tag in given))
    if len(tags) > MAX_TAGS:
        raise InvalidArguments(f"a job carries at most {MAX_TAGS} tags, not {len(tags)}")
    return tags


def check_meta(given: object) -> str | None:
    """``meta`` as stored: a JSON object of at most ``MAX_META_BYTES``."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise InvalidArguments(f"meta is a JSON object (a dict), got {type(given).__name__}")
    try:
        text = json.dumps(dict(given), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidArguments(f"meta is not JSON-serialisable: {error}") from error
    size = len(text.encode(errors="surrogatepass"))
    if size > MAX_META_BYTES:
        raise InvalidArguments(f"meta is {size} bytes as JSON, over the {MAX_META_BYTES} limit")
    return text


def check_seconds(option: str, given: object) -> int | None:
    """``debounce`` and ``unique_for``: seconds (or a ``timedelta``) from one to a year,
    rounded up to whole seconds, as the key's period is stored."""
    if given is None:
        return None
    if isinstance(given, timedelta):
        given = given.total_seconds()
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        raise InvalidArguments(f"{option} is a number of seconds, got {type(given).__name__}")
    if not 1 <= given <= 366 * 86400:
        raise InvalidArguments(f"{option} must be 1 s to a year, got {given!r}")
    return math.ceil(given)


def encode_cursor(job_id: int) -> str:
    return f"j{job_id}"


def decode_cursor(cursor: object) -> int | None:
    """The id a page ends before; ``InvalidArguments`` for text no page gave."""
    if cursor is None:
        return None
    if isinstance(cursor, str) and cursor[:1] == "j" and cursor[1:].isdigit():
        job_id = int(cursor[1:])
        if 0 < job_id <= MAX_JOB_ID + 1:
            return job_id
    raise InvalidArguments(f"not a cursor a page of jobs gave: {cursor!r}")


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidArguments(f"limit is an int from 1 to {MAX_PAGE}, got {limit!r}")
    return limit


def arguments_match(job: Job, match: str | tuple[str, Any]) -> bool:
    """Whether ``job``'s arguments hold ``match``: a substring of their JSON, or a value at a
    path (``kwargs.to``, ``args[0]``, ``kwargs.order.lines[2]``)."""
    arguments = {"args": list(job.args), "kwargs": job.kwargs}
    if isinstance(match, str):
        return match in json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    path, expected = match
    found: Any = arguments
    for step in _steps(path):
        found = _at(found, step)
        if found is _MISSING:
            return False
    return bool(found == expected and type(found) is type(expected))


_MISSING = object()


def _at(value: Any, step: str | int) -> Any:
    """``value[step]`` when ``value`` is a list and ``step`` an index in it, or a dict and
    ``step`` a key of it; else ``_MISSING``."""
    if isinstance(value, list) and isinstance(step, int):
        return value[step] if step < len(value) else _MISSING
    if isinstance(value, dict) and isinstance(step, str):
        return value.get(step, _MISSING)
    return _MISSING


def _steps(path: str) -> list[str | int]:
    if not _PATH.fullmatch(path):
        raise InvalidArguments(f"not an argument path: {path!r} (say kwargs.to or args[0])")
    parts = _STEP.findall(path.removeprefix("$."))
    return [int(part[1:-1]) if part[0] == "[" else part for part in parts]


def _args_match(given: object) -> str | tuple[str, Any] | None:
    if given is None or (isinstance(given, str) and given):
        return given
    if isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], str):
        _steps(given[0])
        return given
    raise InvalidArguments("args_match is a substring or a (path, value) pair")


def _states(given: object) -> tuple[JobState, ...]:
    values = (given,) if isinstance(given, str) else given
    if values is None:
        return ()
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise InvalidArguments(f"state is a state or a list of them, got {type(given).__name__}")
    try:
        return tuple(dict.fromkeys(JobState(value) for value in values))
    except ValueError as error:
        raise InvalidArguments(f"no such job state: {error}") from None


def _names(kind: str, given: object) -> tuple[str, ...]:
    values = (given,) if isinstance(given, str) else given
    if values is None:
        return ()
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise InvalidArguments(f"{kind} is a name or a list of them, got {type(given).__name__}")
    return tuple(dict.fromkeys(check_name(kind, value, InvalidArguments) for value in values))


def _one(kind: str, given: object) -> str | None:
    return None if given is None else check_name(kind, given, InvalidArguments)


def _code(given: object) -> str | None:
    if given is None:
        return None
    if not isinstance(given, str) or not re.fullmatch(r"[A-Z][A-Z_]{0,31}", given):
        raise InvalidArguments(f"an error code is upper case, as TIMEOUT, got {given!r}")
    return given


def _instant(name: str, text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArguments(f"{name} is an ISO 8601 date and time, got {text!r}") from None


@dataclass(frozen=True)
class BulkAction:
    """A bulk action as recorded: who asked, which filter, how many jobs it changed."""

    id: int
    at: datetime
    actor: str
    action: str
    filter: dict[str, Any]
    jobs: int
