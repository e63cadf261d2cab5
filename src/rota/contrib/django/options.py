"""The ``ROTA`` setting of a Django project: which database rota uses, and the Rota's keywords.

::

    ROTA = {"DATABASE": "default", "TABLE_PREFIX": "rota_", "CONCURRENCY": 10}

Keys: ``DATABASE``, an alias of ``DATABASES`` (default ``"default"``); ``DRIVER``, the SQLAlchemy
driver of rota's own connections (default: the DB-API module Django's backend uses, so that a
job queued in Django's transaction is written by the driver rota's SQL is made for); and every
keyword of ``Rota(...)`` in upper case (``CONCURRENCY``, ``TABLE_PREFIX``, ``CLOCK``...). An
unknown key is a ``ConfigError`` naming it and the key it is close to: a misspelt setting that
were ignored would run the project with a default it did not choose.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rota.app import Rota
from rota.config import RotaConfig, Settings
from rota.errors import ConfigError

OWN_KEYS = ("DATABASE", "DRIVER")


def rota_keywords() -> frozenset[str]:
    """Every keyword ``Rota(...)`` takes: its own and its settings' (``rota.config``)."""
    own = {
        parameter.name
        for parameter in inspect.signature(Rota.__init__).parameters.values()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    return frozenset(own | Settings.__required_keys__ | Settings.__optional_keys__)


@dataclass(frozen=True)
class Options:
    """The ``ROTA`` setting, read and checked."""

    database: str = "default"
    driver: str | None = None
    keywords: Mapping[str, Any] = field(default_factory=dict)
    """``Rota(...)``'s keywords, in lower case."""

    def config(self, url: str) -> RotaConfig:
        """The settings a Rota on ``url`` would have: ``ConfigError`` for a bad value."""
        fields = Settings.__required_keys__ | Settings.__optional_keys__
        chosen = {name: value for name, value in self.keywords.items() if name in fields}
        return RotaConfig(url=url, **chosen)


def read(setting: object) -> Options:
    """``Options`` from the value of ``settings.ROTA``."""
    if not isinstance(setting, Mapping):
        raise ConfigError(f"settings.ROTA must be a dict, got {type(setting).__name__}")
    keywords = rota_keywords()
    known = {*OWN_KEYS, *(name.upper() for name in keywords)}
    for key in setting:
        if key not in known:
            raise ConfigError(f"settings.ROTA has an unknown key {key!r}{_hint(key, known)}")
    database = setting.get("DATABASE", "default")
    driver = setting.get("DRIVER")
    if not isinstance(database, str) or not database:
        raise ConfigError(f"settings.ROTA['DATABASE'] must be an alias of DATABASES: {database!r}")
    if driver is not None and not isinstance(driver, str):
        raise ConfigError(f"settings.ROTA['DRIVER'] must be a driver's name: {driver!r}")
    chosen = {key.lower(): value for key, value in setting.items() if key not in OWN_KEYS}
    return Options(database, driver, chosen)


def _hint(key: object, known: set[str]) -> str:
    close = difflib.get_close_matches(str(key).upper(), sorted(known), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f"; known: {', '.join(sorted(known))}"
