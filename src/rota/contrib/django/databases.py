"""The SQLAlchemy URL of a Django database: ``DATABASES[alias]`` as rota's own connections need it.

The parts go to ``URL.create`` (``rota.store.urls.url_from_parts``) one by one, never through
string formatting, so a password holding ``@``, ``:``, ``/`` or ``%`` stays itself. What Django
would pass its driver goes into the URL's query, as SQLAlchemy passes it on: a socket path given
as ``HOST``, and the ``OPTIONS`` (MySQL's ``ssl`` dict as ``ssl_ca``, ``ssl_cert``...), less the
few that are Django's own (``isolation_level``, ``pool``...). An option the URL cannot carry is
a ``ConfigError`` naming it rather than a connection made without it (without its TLS, say).
SQLite needs only the file (or the URI of a test runner's in-memory database): its options
shape Django's own connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from rota.errors import ConfigError
from rota.store.urls import url_from_parts

DRIVERS = {
    "MySQLdb": "mysqldb",
    "pymysql": "pymysql",
    "psycopg": "psycopg",
    "psycopg2": "psycopg2",
    "sqlite3": "pysqlite",
}
"""SQLAlchemy's name of each DB-API module a Django backend may use (PyMySQL may stand in for
MySQLdb, through ``pymysql.install_as_MySQLdb()``: its module is still named ``pymysql``)."""
VENDOR_DRIVERS = {
    "mysql": ("mysqldb", "pymysql"),
    "postgresql": ("psycopg", "psycopg2"),
    "sqlite": ("pysqlite",),
}
DJANGO_OPTIONS = {
    "mysql": frozenset({"isolation_level"}),
    "postgresql": frozenset(
        {"isolation_level", "server_side_binding", "assume_role", "pool", "cursor_factory"}
    ),
}
"""``OPTIONS`` that Django acts on itself instead of passing them to its driver."""
MYSQL_SSL = frozenset({"ca", "cert", "key", "capath", "cipher", "check_hostname"})


def backend_driver(wrapper: object) -> str:
    """The SQLAlchemy driver of the DB-API module a Django connection uses."""
    module = getattr(wrapper, "Database", None)
    name = getattr(module, "__name__", "").partition(".")[0]
    if name not in DRIVERS:
        raise ConfigError(
            f"rota does not know the {name or 'unnamed'} driver of this Django database: set "
            "settings.ROTA['DRIVER'] to a SQLAlchemy driver (mysqldb, pymysql, psycopg)"
        )
    return DRIVERS[name]


def database_url(vendor: str, settings: Mapping[str, Any], driver: str) -> str:
    """The URL of the database described by ``settings`` (``DATABASES[alias]``), through
    ``driver``; ``vendor`` is its Django backend's (``connection.vendor``)."""
    if vendor not in VENDOR_DRIVERS:
        raise ConfigError(
            f"rota runs on MySQL/MariaDB, PostgreSQL or SQLite, not on Django's {vendor!r} backend"
        )
    if driver not in VENDOR_DRIVERS[vendor]:
        choices = ", ".join(VENDOR_DRIVERS[vendor])
        raise ConfigError(f"{driver!r} is not a {vendor} driver rota can use: one of {choices}")
    drivername = f"{vendor}+{driver}"
    if vendor == "sqlite":
        return sqlite_url(drivername, str(settings.get("NAME") or ""))
    host = str(settings.get("HOST") or "") or None
    query = options_query(vendor, settings.get("OPTIONS") or {})
    if host is not None and host.startswith("/"):  # a Unix socket (MySQL) or its directory (PG)
        query["unix_socket" if vendor == "mysql" else "host"] = host
        host = None
    port = settings.get("PORT")
    return url_from_parts(
        drivername,
        username=str(settings.get("USER") or "") or None,
        password=str(settings.get("PASSWORD") or "") or None,
        host=host,
        port=int(port) if port not in (None, "") else None,
        database=str(settings.get("NAME") or "") or None,
        query=query,
    )


def sqlite_url(drivername: str, name: str) -> str:
    """The URL of a SQLite file, or of the shared in-memory database a test runner names with
    a ``file:`` URI (``file:memorydb_default?mode=memory&cache=shared``): opened as that URI,
    it is Django's own in-memory database, not a file of that name."""
    path, _, given = name.partition("?")
    query = dict(parse_qsl(given))
    if not name.startswith("file:") or query.get("mode") != "memory":
        return url_from_parts(drivername, database=name)
    return url_from_parts(drivername, database=path, query={**query, "uri": "true"})


def options_query(vendor: str, options: Mapping[str, Any]) -> dict[str, str]:
    """Django's ``OPTIONS`` for its driver as a URL query: text, numbers and flags as text."""
    query: dict[str, str] = {}
    for key, value in options.items():
        if key in DJANGO_OPTIONS[vendor]:
            continue
        if vendor == "mysql" and key == "ssl" and isinstance(value, Mapping):
            for part, setting in value.items():
                if part not in MYSQL_SSL:
                    raise _unusable(f"OPTIONS['ssl'][{part!r}]")
                query[f"ssl_{part}"] = _text(setting, f"OPTIONS['ssl'][{part!r}]")
            continue
        query[str(key)] = _text(value, f"OPTIONS[{key!r}]")
    return query


def _text(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise _unusable(where)


def _unusable(where: str) -> ConfigError:
    return ConfigError(
        f"rota cannot pass the database's {where} to its own connections: it takes text, "
        "numbers and flags (MySQL's ssl: ca, cert, key, capath, cipher, check_hostname)"
    )
