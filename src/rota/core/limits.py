"""Flow control without SQL: limit options, their keys, rate windows and who may start.

A task may cap how many of its jobs run at once per key (``concurrency_limit``) and how many
start per period per key (``rate_limit``).  The keys are resolved from the handler's arguments
when a job is queued and stored on its row, prefixed with the task's name, so one database
compares them for every worker; the claim (``rota.store.limits``) locks each key's row of the
limits table, counts and takes, and asks ``admit`` which of its candidates may start.

Rates use fixed windows aligned to the Unix epoch (each UTC second, minute or hour): a window
never holds more starts than the limit, which is what "100 per minute" is measured against in
practice; two neighbouring windows may together hold twice the limit inside one period.  A
token bucket would allow that in every period, a sliding log would need a row per start.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import string
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from rota.core import checks
from rota.errors import ConfigError, InvalidArguments

KEY_LENGTH = 255
"""Longest key stored; a longer (or unstorable) key is stored as a readable prefix and digest."""
READABLE_PREFIX = 180
PERIODS = {"s": 1, "m": 60, "h": 3600}
RATE_SPEC = re.compile(r"([1-9][0-9]{0,8})/([smh])")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
KeySource = str | Callable[..., Any]
"""A ``str.format`` template over the handler's arguments, or a callable taking them."""


@dataclass(frozen=True)
class Rate:
    """``count`` starts per ``period`` seconds."""

    count: int
    period: int

    def window(self, now: datetime) -> datetime:
        """The start of the epoch-aligned window holding ``now``."""
        elapsed = now - EPOCH
        seconds = elapsed.days * 86_400 + elapsed.seconds
        return EPOCH + timedelta(seconds=seconds - seconds % self.period)

    def available(self, tokens: float | None, window: datetime | None, now: datetime) -> int:
        """Starts left at ``now`` for a key whose row holds ``tokens`` left in the window that
        began at ``window``: a full window once that one is over (or was never opened).  A
        lowered limit applies at once (the tokens are capped by ``count``).

        None when the row's window is later than ``now``'s: a claim whose ``now`` was taken
        before another claim opened the next window would spend that window's tokens on
        starts it records in its own, one window holding more than ``count`` starts."""
        current = self.window(now)
        if tokens is None or window is None or window < current:
            return self.count
        if window > current:
            return 0
        return max(0, min(self.count, math.floor(tokens)))


def parse_rate(spec: object, label: str) -> Rate:
    """``"100/m"`` → ``Rate(100, 60)``; anything else is a ``ConfigError`` saying the form."""
    match = RATE_SPEC.fullmatch(spec) if isinstance(spec, str) else None
    if match is None:
        raise ConfigError(
            f"{label} rate_limit must be '<count>/<s|m|h>' with a positive whole count, "
            f"e.g. '100/m' (100 starts a minute), got {spec!r}"
        )
    return Rate(int(match.group(1)), PERIODS[match.group(2)])


def stored_key(key: str) -> str:
    """``key`` as the database can compare it exactly: a key too long, or holding what a
    backend mangles (a control, format or surrogate character; trailing whitespace, which
    MySQL's PAD SPACE collations ignore), becomes its readable start and a SHA-256 digest."""
    if len(key) <= KEY_LENGTH and not key[-1:].isspace() and not _unsafe(key):
        return key
    prefix = ""
    for char in key[:READABLE_PREFIX]:
        if _unsafe(char):
            break
        prefix += char
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix.rstrip()}#{digest}"


def _unsafe(text: str) -> bool:
    return any(unicodedata.category(char) in ("Cc", "Cf", "Cs") for char in text)


@dataclass(frozen=True)
class KeyRule:
    """How one limit's key is resolved: per task (``source`` None), a template or a callable."""

    task: str
    source: KeySource | None
    signature: inspect.Signature

    def resolve(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The stored key of a job with these arguments; ``InvalidArguments`` if there is
        none (a callable that raised or returned something else than a string)."""
        if self.source is None:
            return stored_key(self.task)
        if callable(self.source):
            try:
                value = self.source(*args, **kwargs)
            except Exception as error:
                raise InvalidArguments(
                    f"task {self.task!r}: its key function raised {type(error).__name__}: {error}"
                ) from error
        else:
            value = self._format(self.source, args, kwargs)
        if not isinstance(value, str) or not value:
            raise InvalidArguments(
                f"task {self.task!r}: a limit key must be a non-empty string, got {value!r}"
            )
        return stored_key(f"{self.task}:{value}")

    def _format(self, template: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        try:
            fields: dict[str, Any] = {}
            if self.signature.parameters:
                bound = self.signature.bind(None, *args, **kwargs)
                bound.apply_defaults()
                fields = _fields(self.signature, bound.arguments)
            return template.format(**fields)
        except Exception as error:
            raise InvalidArguments(
                f"task {self.task!r}: cannot fill its key {template!r} from these arguments "
                f"({type(error).__name__}: {error})"
            ) from error


def _fields(signature: inspect.Signature, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments by parameter name, the context's left out and ``**kwargs`` spread."""
    fields: dict[str, Any] = {}
    for index, (name, parameter) in enumerate(signature.parameters.items()):
        if index == 0 or name not in arguments:
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            fields.update(arguments[name])
        else:
            fields[name] = arguments[name]
    return fields


def key_rule(task: str, source: object, signature: inspect.Signature, label: str) -> KeyRule:
    """Check a key option at definition time: a template may name only the handler's
    parameters (any name, if it takes ``**kwargs``), and never by position."""
    if source is None or callable(source):
        return KeyRule(task, source, signature)
    if not isinstance(source, str) or not source:
        raise ConfigError(f"{label} must be a str.format template or a callable, got {source!r}")
    parameters = list(signature.parameters.values())[1:]
    named = {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    open_ended = any(p.kind is p.VAR_KEYWORD for p in parameters)
    try:
        parsed = [field for _, field, _, _ in string.Formatter().parse(source) if field is not None]
    except ValueError as error:
        raise ConfigError(f"{label} {source!r} is not a valid template: {error}") from None
    for field in parsed:
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        if not root or root.isdigit():
            raise ConfigError(f"{label} {source!r} must name its fields, e.g. {{account_id}}")
        if root not in named and not open_ended:
            raise ConfigError(
                f"{label} {source!r} names {root!r}, which is not a parameter of the handler"
            )
    return KeyRule(task, source, signature)


@dataclass(frozen=True)
class FlowLimits:
    """A task's limits, as the claim applies them: ``None`` where there is none."""

    task: str
    concurrency: int | None = None
    concurrency_key: KeyRule | None = None
    rate: Rate | None = None
    rate_key: KeyRule | None = None

    def keys(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``(concurrency_key, rate_key)`` of a job with these arguments."""
        concurrency = self.concurrency_key.resolve(args, kwargs) if self.concurrency_key else None
        rate = self.rate_key.resolve(args, kwargs) if self.rate_key else None
        return concurrency, rate

    def fallback_keys(self) -> tuple[str | None, str | None]:
        """The per-task keys, for a job whose own cannot be resolved: its run will fail on the
        same arguments, and until then it counts against the whole task, never against none."""
        task = stored_key(self.task)
        return (task if self.concurrency else None, task if self.rate else None)


def flow_limits(
    task: str,
    signature: inspect.Signature,
    concurrency_limit: object,
    concurrency_key: object,
    rate_limit: object,
    rate_key: object,
) -> FlowLimits | None:
    """A definition's limit options checked (``ConfigError`` naming the first wrong one), or
    ``None`` for a task without limits, whose claims then take the plain path."""
    label = f"task {task!r}:"
    if concurrency_key is not None and concurrency_limit is None:
        raise ConfigError(f"{label} concurrency_key needs a concurrency_limit")
    if rate_key is not None and rate_limit is None:
        raise ConfigError(f"{label} rate_key needs a rate_limit")
    if concurrency_limit is None and rate_limit is None:
        return None
    concurrency = None
    if concurrency_limit is not None:
        concurrency = checks.check_int(
            concurrency_limit, ConfigError, f"{label} concurrency_limit", 1
        )
    return FlowLimits(
        task=task,
        concurrency=concurrency,
        concurrency_key=(
            key_rule(task, concurrency_key, signature, f"{label} concurrency_key")
            if concurrency is not None
            else None
        ),
        rate=parse_rate(rate_limit, label) if rate_limit is not None else None,
        rate_key=(
            key_rule(task, rate_key, signature, f"{label} rate_key")
            if rate_limit is not None
            else None
        ),
    )


@dataclass(frozen=True)
class Candidate:
    """A due job the claim may start, with the keys it counts against."""

    id: int
    task: str
    concurrency_key: str | None
    rate_key: str | None


def admit(
    candidates: Sequence[Candidate],
    limits: Mapping[str, FlowLimits],
    free: dict[str, int],
    tokens: dict[str, int],
) -> list[int]:
    """The ids of the ``candidates`` (in their order) that may start, taking from ``free``
    (running slots left per concurrency key) and ``tokens`` (starts left per rate key) as
    it goes; a key missing from either is blocked (its row is locked by another claim)."""
    admitted: list[int] = []
    for candidate in candidates:
        flow = limits.get(candidate.task)
        ckey = candidate.concurrency_key if flow and flow.concurrency else None
        rkey = candidate.rate_key if flow and flow.rate else None
        if ckey is not None and free.get(ckey, 0) <= 0:
            continue
        if rkey is not None and tokens.get(rkey, 0) <= 0:
            continue
        if ckey is not None:
            free[ckey] -= 1
        if rkey is not None:
            tokens[rkey] -= 1
        admitted.append(candidate.id)
    return admitted
