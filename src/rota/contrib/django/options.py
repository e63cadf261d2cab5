"""The ``ROTA`` setting of a Django project: which database rota uses, and the Rota's keywords.

::

    ROTA = {"DATABASE": "default", "TABLE_PREFIX": "rota_", "CONCURRENCY": 10}

Keys: ``DATABASE``, an alias of ``DATABASES`` (default ``"default"``); ``DRIVER``, the SQLAlchemy
driver of rota's own connections (default: the DB-API module Django's backend uses, so that a
job queued in Django's transaction is written by the driver rota's SQL is made for); and every
keyword of ``Rota(...)`` in upper case (``CONCURRENCY``, ``TABLE_PREFIX``, ``CLOCK``...); and
``DASHBOARD``, where the ASGI application serves the dashboard and who may open it
(``DashboardOptions``). An unknown key is a ``ConfigError`` naming it and the key it is close to:
a misspelt setting that were ignored would run the project with a default it did not choose.
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

OWN_KEYS = ("DATABASE", "DRIVER", "DASHBOARD")
DASHBOARD_KEYS = ("PATH", "AUTH", "TOKEN", "METRICS_TOKEN")
AUTHS = ("staff", "token")


@dataclass(frozen=True)
class DashboardOptions:
    """``ROTA["DASHBOARD"]``: ``{"PATH": "/rota/", "AUTH": "staff"}`` (those are the defaults).

    ``PATH`` is the prefix the ASGI application serves the dashboard under
    (``rota.contrib.django.dashboard.with_dashboard``) and the admin links to. ``AUTH`` is
    ``"staff"``, Django's own login: only an active staff user's session opens it; or
    ``"token"``, the dashboard's own login with ``TOKEN`` (and ``METRICS_TOKEN`` for
    ``/metrics``), for a dashboard some of whose users have no Django account. There is no
    open setting: a dashboard served with the project's pages can retry and cancel jobs.
    """

    path: str = "/rota/"
    auth: str = "staff"
    token: str | None = None
    metrics_token: str | None = None


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
    dashboard: DashboardOptions | None = None
    """``None`` without a ``DASHBOARD`` key: the project serves no dashboard."""

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
    dashboard = None if "DASHBOARD" not in setting else read_dashboard(setting["DASHBOARD"])
    return Options(database, driver, chosen, dashboard)


def read_dashboard(setting: object) -> DashboardOptions:
    """``DashboardOptions`` from the value of ``settings.ROTA["DASHBOARD"]``."""
    where = "settings.ROTA['DASHBOARD']"
    if not isinstance(setting, Mapping):
        raise ConfigError(f"{where} must be a dict, got {type(setting).__name__}")
    for key in setting:
        if key not in DASHBOARD_KEYS:
            raise ConfigError(f"{where} has an unknown key {key!r}{_hint(key, {*DASHBOARD_KEYS})}")
    path = setting.get("PATH", "/rota/")
    if not isinstance(path, str) or not _is_prefix(path):
        raise ConfigError(
            f"{where}['PATH'] must be a path below the site's root that starts and ends with "
            f"'/', such as '/rota/': {path!r}"
        )
    auth = setting.get("AUTH", "staff")
    if auth not in AUTHS:
        raise ConfigError(f"{where}['AUTH'] must be one of {', '.join(AUTHS)}: {auth!r}")
    token, metrics_token = setting.get("TOKEN"), setting.get("METRICS_TOKEN")
    if auth == "token" and token is None:
        raise ConfigError(f"{where}['AUTH'] is 'token', which needs a TOKEN")
    if auth == "staff" and (token, metrics_token) != (None, None):
        raise ConfigError(f"{where}: TOKEN and METRICS_TOKEN are for AUTH 'token' only")
    return DashboardOptions(path, auth, token, metrics_token)


def _is_prefix(path: str) -> bool:
    """Whether ``path`` is a plain, non-root path prefix (``/rota/``, ``/ops/jobs/``)."""
    segments = path.split("/")[1:-1]
    return (
        len(path) > 1
        and path.startswith("/")
        and path.endswith("/")
        and all(segment not in ("", ".", "..") for segment in segments)
        and not any(char in path for char in "?#%\\")
        and path.isprintable()
    )


def _hint(key: object, known: set[str]) -> str:
    close = difflib.get_close_matches(str(key).upper(), sorted(known), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f"; known: {', '.join(sorted(known))}"
