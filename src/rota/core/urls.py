"""Database URLs as text: checked, described and masked without a database library.

The configuration, the façade and the CLI need only know that a URL is well formed, say which
database it names and show it without its password; connecting to it is the store's business
(``rota.store.urls`` parses it with SQLAlchemy).  The grammar here is SQLAlchemy's
(``sqlalchemy.engine.url``), so a URL passes this check exactly when the store can parse it, and
no message ever quotes a URL, which may hold a password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, quote_plus, unquote

from rota.errors import ConfigError

NOT_A_URL = "not a database URL rota can use, e.g. mysql://user:password@host/database"
SEVERAL_HOSTS = {
    "postgresql": "name several PostgreSQL servers in the query string, e.g. "
    "postgresql://user@/database?host=a:5432,b:5432&target_session_attrs=read-write",
    "mysql": "the MySQL and MariaDB drivers connect to one host only: put haproxy or ProxySQL in "
    "front of the servers, or use a DNS name that follows the primary, and name that host",
    "sqlite": "name one database server",
}
"""What each backend takes instead of a URL listing several servers."""
BACKEND_NAMES = {"postgres": "postgresql", "mariadb": "mysql"}
URL_PATTERN = re.compile(
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
    """,
    re.X,
)
"""SQLAlchemy's own pattern (``sqlalchemy.engine.url._parse_url``)."""


@dataclass(frozen=True)
class UrlParts:
    """A URL's parts, decoded as SQLAlchemy decodes them."""

    drivername: str
    username: str | None
    password: str | None
    host: str | None
    port: int | None
    database: str | None
    query: Mapping[str, str | tuple[str, ...]]

    @property
    def backend(self) -> str:
        """``mysql`` for ``mysql+pymysql``, as SQLAlchemy's ``get_backend_name``."""
        return self.drivername.partition("+")[0]


def split_url(url: object) -> UrlParts:
    """The parts of ``url``; a ``ConfigError`` that never quotes it when it is not one."""
    match = URL_PATTERN.match(url) if isinstance(url, str) else None
    if match is None:
        raise ConfigError(several_hosts(url) or NOT_A_URL)
    part = match.groupdict()
    try:
        port = int(part["port"]) if part["port"] else None
    except ValueError:
        raise ConfigError(several_hosts(url) or NOT_A_URL) from None
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in parse_qsl(part["query"] or ""):
        held = query.get(key)
        if held is None:
            query[key] = value
        else:
            query[key] = (*((held,) if isinstance(held, str) else held), value)
    decoded = {name: None if part[name] is None else unquote(part[name]) for name in part}
    return UrlParts(
        part["name"],
        decoded["username"],
        decoded["password"],
        part["ipv4host"] or part["ipv6host"],
        port,
        decoded["database"],
        query,
    )


def several_hosts(url: object) -> str | None:
    """What to write instead, for a URL string that lists servers as ``a:1,b:2`` before its
    path (which SQLAlchemy cannot parse), naming the backend's way; else ``None``."""
    if not isinstance(url, str):
        return None
    scheme, _, rest = url.partition("://")
    hosts = rest.partition("/")[0].rpartition("@")[2]
    backend = scheme.partition("+")[0]
    advice = SEVERAL_HOSTS.get(BACKEND_NAMES.get(backend, backend))
    if advice is None or "," not in hosts:
        return None
    return several_hosts_message(advice)


def several_hosts_message(advice: str) -> str:
    return f"this URL names several database servers: {advice}"


def describe_url(url: str) -> str:
    """The URL without its password, for logs and errors."""
    return description(split_url(url))


def description(parts: UrlParts) -> str:
    return f"{parts.backend} database {parts.database!r} on {servers(parts)}"


def servers(parts: UrlParts) -> str:
    """``host:port``, or the hosts of the query string (PostgreSQL's several), or a local file."""
    if parts.host:
        return f"{parts.host}:{parts.port}" if parts.port else parts.host
    hosts, ports = (parts.query.get(key) for key in ("host", "port"))
    if hosts is None:
        return "local file"
    shown = hosts if isinstance(hosts, str) else ",".join(hosts)
    if ports is None:
        return shown
    return f"{shown} (ports {ports if isinstance(ports, str) else ','.join(ports)})"


def masked_url(url: str) -> str:
    """``url`` with its password, and any password in its query string, shown as ``***``;
    written as SQLAlchemy writes a URL (``render_as_string``), and ``***`` for what is none."""
    try:
        parts = split_url(url)
    except ConfigError:
        return "***"
    shown = parts.drivername + "://"
    if parts.username is not None:
        shown += quote(readable(parts.username), safe=" +")
        shown += "" if parts.password is None else ":***"
        shown += "@"
    if parts.host is not None:
        shown += f"[{parts.host}]" if ":" in parts.host else parts.host
    if parts.port is not None:
        shown += f":{parts.port}"
    if parts.database is not None:
        shown += "/" + quote(readable(parts.database), safe=" +/")
    if parts.query:
        shown += "?" + "&".join(
            f"{quote_plus(readable(key))}={value}"
            for key in sorted(parts.query)
            for value in _shown_values(key, parts.query[key])
        )
    return shown


def _shown_values(key: str, value: str | tuple[str, ...]) -> list[str]:
    if "pass" in key.lower():
        return ["***"]
    return [quote_plus(readable(item)) for item in ((value,) if isinstance(value, str) else value)]


def readable(name: str) -> str:
    """``name`` with each byte that was not UTF-8 shown as the replacement character."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
