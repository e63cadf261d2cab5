"""``Rota``'s settings from ``ROTA_<KEYWORD>`` variables, so a deploy configures a worker
without editing code; a keyword argument wins over its variable.

Each variable is parsed by its field's type and then validated by ``RotaConfig`` exactly as the
keyword is, the error naming the variable.  An unknown ``ROTA_*`` name is most often a typo
that would otherwise be ignored in silence, so it is logged once with the nearest known name.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field
from typing import Any

from rota.errors import ConfigError

PREFIX = "ROTA_"
URL_VARIABLE = "ROTA_DATABASE_URL"
LOG_FORMAT_VARIABLE = "ROTA_LOG_FORMAT"
DASHBOARD_TOKEN = "ROTA_DASHBOARD_TOKEN"
METRICS_TOKEN = "ROTA_METRICS_TOKEN"
DASHBOARD_ALLOWED_HOSTS = "ROTA_DASHBOARD_ALLOWED_HOSTS"
API_TOKENS_READ = "ROTA_API_TOKENS_READ"
API_TOKENS_OPERATE = "ROTA_API_TOKENS_OPERATE"
SUPERVISOR_FD = "ROTA_SUPERVISOR_FD"
OTHER_VARIABLES = frozenset(
    {
        URL_VARIABLE,
        LOG_FORMAT_VARIABLE,
        DASHBOARD_TOKEN,
        METRICS_TOKEN,
        DASHBOARD_ALLOWED_HOSTS,
        API_TOKENS_READ,
        API_TOKENS_OPERATE,
        SUPERVISOR_FD,
    }
)
"""Variables rota reads outside ``RotaConfig`` (the URL, the façade's ``log_format``,
``rota dashboard``'s, the supervisor's), named here once so that none of them is ever warned
about as unknown."""
FREE_PREFIXES = ("ROTA_TEST_",)
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
FORMATS = {
    "int": "an integer",
    "int | None": "an integer, or empty for none",
    "float": "seconds (a number)",
    "timedelta": "seconds (a number)",
    "bool": "true or false (also 1/0, yes/no, on/off)",
    "str": "text",
    "Mapping[str, int] | None": "queue=concurrency pairs, comma-separated (mail=2,default=5)",
}
logger = logging.getLogger("rota")
_warned: set[str] = set()


def variable(name: str) -> str:
    return URL_VARIABLE if name == "url" else PREFIX + name.upper()


Fields = Iterable[Field[Any]]


def settings_from(environ: Mapping[str, str], config: Fields) -> dict[str, Any]:
    """The ``config`` fields (``RotaConfig``'s) set in ``environ``, the URL aside, parsed by
    their types."""
    warn_unknown(environ, config)
    found: dict[str, Any] = {}
    for item in settings(config):
        raw = environ.get(variable(item.name))
        if raw is not None:
            found[item.name] = parse(variable(item.name), str(item.type), raw.strip())
    return found


def blame(error: ConfigError, from_environment: Mapping[str, Any]) -> ConfigError:
    """``error`` naming the variable that set the value it refuses, if one did."""
    subject = str(error).split(" must ")[0]
    for name in from_environment:
        # "queue mail must ..." is about $ROTA_QUEUES; any other subject names its setting.
        if (name == "queues") if subject.startswith("queue ") else (name in subject):
            return ConfigError(f"${variable(name)}: {error}")
    return error


def parse(name: str, kind: str, raw: str) -> Any:
    try:
        return PARSERS[kind](raw)
    except (ValueError, KeyError):
        raise ConfigError(f"${name} must be {FORMATS[kind]}, got {raw!r}") from None


def _bool(raw: str) -> bool:
    if raw.lower() in TRUE:
        return True
    if raw.lower() in FALSE:
        return False
    raise ValueError(raw)


def _queues(raw: str) -> dict[str, int] | None:
    if not raw:
        return None
    pairs = (item.split("=") for item in raw.split(",") if item.strip())
    return {queue.strip(): int(limit) for queue, limit in pairs}


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "int | None": lambda raw: int(raw) if raw and raw.lower() != "none" else None,
    "float": float,
    "timedelta": float,
    "bool": _bool,
    "str": str,
    "Mapping[str, int] | None": _queues,
}


def settings(config: Fields) -> list[Field[Any]]:
    return [item for item in config if item.name != "url"]


def warn_unknown(environ: Mapping[str, str], config: Fields) -> None:
    known = {variable(item.name) for item in settings(config)} | OTHER_VARIABLES
    for name in sorted(environ):
        if not name.startswith(PREFIX) or name in known or name.startswith(FREE_PREFIXES):
            continue
        if name in _warned:
            continue
        _warned.add(name)
        nearest = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {nearest[0]}?" if nearest else ""
        logger.warning("unknown setting $%s is ignored%s", name, hint)


def table(config: Fields) -> str:
    """The Markdown table of every variable (docs/configuration.md and README show it)."""
    rows = [
        "| Variable | Keyword | Format | Default |",
        "| --- | --- | --- | --- |",
        f"| `{URL_VARIABLE}` | `url` (the first argument) | a database URL | none: required "
        "to run a worker |",
        f"| `{LOG_FORMAT_VARIABLE}` | `log_format` | `text` or `json` | `text` |",
    ]
    for item in settings(config):
        default = "" if item.default is MISSING else _shown(item.default)
        rows.append(
            f"| `{variable(item.name)}` | `{item.name}` | {FORMATS[str(item.type)]} | {default} |"
        )
    return "\n".join(rows) + "\n"


def _shown(value: object) -> str:
    seconds = getattr(value, "total_seconds", None)
    if seconds is not None:
        return f"`{round(seconds())}`"
    if value is None:
        return "none"
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"
