"""Settings of a ``Rota`` instance, validated once and frozen."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import TypedDict

from rota.core import checks, payload
from rota.core.connection import (
    DEFAULT_CONNECTION,
    DEFAULT_NAMESPACE,
    DEFAULT_TABLE_PREFIX,
    KEEPALIVE_PROBES,
    ConnectionSettings,
)
from rota.core.names import check_name
from rota.core.urls import masked_url, split_url
from rota.environment import URL_VARIABLE, blame, settings_from, table
from rota.errors import ConfigError
from rota.observe.hooks import DEFAULT_HOOK_TIMEOUT
from rota.observe.metrics import DEFAULT_METRICS_HOST

DEFAULT_URL = "sqlite:///rota.db"
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
DEFAULT_MAX_SNOOZES = 100
DEFAULT_GRACE = 30.0
MAX_PORT = 65535
"""Seconds a stopping worker gives its running jobs (``stop``, ``run``, ``rota worker``)."""


class Settings(TypedDict, total=False):
    """The keywords of ``Rota(...)`` that are ``RotaConfig`` fields; the defaults are there."""

    concurrency: int
    catchup_missed: bool
    max_missed_runs: int
    misfire_grace: float
    table_prefix: str
    namespace: str
    auto_migrate: bool
    poll_interval: float
    lease_seconds: float
    connect_timeout: float
    read_timeout: float
    write_timeout: float
    keepalive: float
    max_payload_bytes: int
    max_result_bytes: int
    max_snoozes: int
    alert_after_failures: int | None
    hook_timeout: float
    queues: Mapping[str, int] | None
    succeeded_retention: timedelta | float
    failed_retention: timedelta | float
    metrics_port: int | None
    metrics_host: str


@dataclass(frozen=True)
class RotaConfig:
    """A ``Rota``'s settings; its ``repr`` masks the URL's password so it can be logged."""

    url: str
    concurrency: int = 5
    catchup_missed: bool = False
    max_missed_runs: int = 1
    misfire_grace: float = 60.0
    table_prefix: str = DEFAULT_TABLE_PREFIX
    namespace: str = DEFAULT_NAMESPACE
    """The service this ``Rota`` is: its jobs, schedules, queues, limits and workers carry it, and
    it claims, syncs and disables only its own (several services on one database)."""
    auto_migrate: bool = True
    poll_interval: float = 0.5
    lease_seconds: float = 30.0
    connect_timeout: float = 30.0
    read_timeout: float = DEFAULT_CONNECTION.read_timeout
    """Seconds one statement may wait for the server's answer before its connection is taken as
    lost (MySQL/MariaDB); above InnoDB's default 50 s lock wait, which rota's writes may incur."""
    write_timeout: float = DEFAULT_CONNECTION.write_timeout
    """Seconds sending one statement may take (MySQL/MariaDB)."""
    keepalive: float = DEFAULT_CONNECTION.keepalive
    """Seconds within which a connection whose peer went silent (a dropped link, a dead NAT
    entry, a firewall DROP) is found dead by TCP keepalive and ``TCP_USER_TIMEOUT``; at least 4."""
    max_payload_bytes: int = payload.DEFAULT_MAX_PAYLOAD_BYTES
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    """The largest handler result kept, as JSON; a larger one fails its attempt."""
    max_snoozes: int = DEFAULT_MAX_SNOOZES
    """How many times a job may ``Snooze`` (a task's ``max_snoozes`` overrides it)."""
    alert_after_failures: int | None = None
    """Ticks in a row that fail before a schedule is *failing* (a task's own setting overrides
    it); ``None``: no alerts unless a task asks for them."""
    hook_timeout: float = DEFAULT_HOOK_TIMEOUT
    """Seconds a hook may run before it is logged and abandoned (``observe.hooks``)."""
    queues: Mapping[str, int] | None = None
    """Queues with a concurrency of their own; a worker then serves exactly these."""
    succeeded_retention: timedelta = timedelta(days=7)
    failed_retention: timedelta = timedelta(days=30)
    """Retention periods: a ``timedelta``, or a number of seconds (stored as a ``timedelta``)."""
    metrics_port: int | None = None
    """The port a worker serves its Prometheus metrics on (``observe.metrics``), from ``start``
    to ``stop``; 0: one the system picks (``Rota.metrics_port``); ``None``: none served."""
    metrics_host: str = DEFAULT_METRICS_HOST
    """The address the metrics are served on: this host only unless told otherwise."""

    def __post_init__(self) -> None:
        split_url(self.url)
        checks.check_int(self.concurrency, ConfigError, "concurrency", 1)
        checks.check_int(self.max_missed_runs, ConfigError, "max_missed_runs", 0)
        checks.check_int(self.max_payload_bytes, ConfigError, "max_payload_bytes", 1)
        checks.check_int(self.max_result_bytes, ConfigError, "max_result_bytes", 1)
        checks.check_int(self.max_snoozes, ConfigError, "max_snoozes", 0)
        if self.metrics_port is not None:
            checks.check_int(self.metrics_port, ConfigError, "metrics_port", 0)
            if self.metrics_port > MAX_PORT:
                raise ConfigError(
                    f"metrics_port must be at most {MAX_PORT}, got {self.metrics_port}"
                )
        if not isinstance(self.metrics_host, str) or not self.metrics_host:
            raise ConfigError(
                f"metrics_host must be a host name or address, got {self.metrics_host!r}"
            )
        if self.alert_after_failures is not None:
            checks.check_int(self.alert_after_failures, ConfigError, "alert_after_failures", 1)
        for name in ("poll_interval", "lease_seconds", "connect_timeout", "misfire_grace"):
            checks.seconds(getattr(self, name), ConfigError, name, positive=True)
        for name in ("read_timeout", "write_timeout", "keepalive", "hook_timeout"):
            number = checks.seconds(getattr(self, name), ConfigError, name, positive=True)
            object.__setattr__(self, name, number)
        if self.keepalive < 1 + KEEPALIVE_PROBES:
            raise ConfigError(
                f"keepalive must be at least {1 + KEEPALIVE_PROBES} seconds: a second of quiet, "
                f"then {KEEPALIVE_PROBES} probes a second apart"
            )
        if self.lease_seconds < 3 * self.poll_interval:
            raise ConfigError("lease_seconds must be at least three poll intervals")
        for queue, limit in (self.queues or {}).items():
            check_name("queue", queue, ConfigError)
            checks.check_int(limit, ConfigError, f"queue {queue!r}'s concurrency", 1)
        for name in ("succeeded_retention", "failed_retention"):
            period = checks.duration(getattr(self, name), ConfigError, name, positive=True)
            object.__setattr__(self, name, period)
        if not isinstance(self.catchup_missed, bool) or not isinstance(self.auto_migrate, bool):
            raise ConfigError("catchup_missed and auto_migrate must be True or False")
        check_table_prefix(self.table_prefix)
        check_name("namespace", self.namespace, ConfigError)

    @property
    def connection(self) -> ConnectionSettings:
        """What bounds each database connection's silences (the store's view of them)."""
        return ConnectionSettings(self.read_timeout, self.write_timeout, self.keepalive)

    def __repr__(self) -> str:
        values = {item.name: getattr(self, item.name) for item in fields(self)}
        values["url"] = masked_url(self.url)
        return f"RotaConfig({', '.join(f'{name}={value!r}' for name, value in values.items())})"


def check_table_prefix(prefix: object) -> str:
    """Table names are built from the prefix, so it is kept to identifier characters; capitals
    are kept (rota quotes every name it writes, so PostgreSQL does not fold their case)."""
    if (
        not isinstance(prefix, str)
        or not prefix.isascii()
        or not prefix.replace("_", "").isalnum()
        or len(prefix) > 20
    ):
        raise ConfigError(f"table_prefix must be up to 20 letters, digits or '_', got {prefix!r}")
    return prefix


def default_url() -> str:
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def url_named(url: str | None) -> bool:
    """Whether a database was chosen (the argument or ``$ROTA_DATABASE_URL``) rather than
    defaulted: a worker on the default would run beside the real ones, on a file of its own."""
    return bool(url or os.environ.get(URL_VARIABLE))


def configure(url: str | None, settings: Mapping[str, object]) -> RotaConfig:
    """``RotaConfig`` of ``Rota(url, **settings)``: each keyword not given is read from its
    ``ROTA_<KEYWORD>`` variable (``rota.environment``), else its default."""
    environment = settings_from(os.environ, fields(RotaConfig))
    from_environment = {name: value for name, value in environment.items() if name not in settings}
    try:
        return RotaConfig(url=url or default_url(), **{**environment, **settings})
    except ConfigError as error:
        raise blame(error, from_environment) from None


NO_DATABASE = (
    "no database named: set $ROTA_DATABASE_URL or pass the URL (Rota(url)) to run a worker; "
    f"to run on the embedded SQLite file, name it: Rota({DEFAULT_URL!r})"
)


def environment_table() -> str:
    """The Markdown table of every ``ROTA_*`` setting, as the documentation shows it."""
    return table(fields(RotaConfig))
