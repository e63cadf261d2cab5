"""One class per database backend, chosen once from a URL: every difference lives in one of them.

River keeps one driver per database for the same reason: what MySQL does differently is read in
``mysql.py``, never found scattered as ``if`` branches through the store.
"""

from __future__ import annotations

from sqlalchemy.engine import URL

from rota.errors import ConfigError
from rota.store.dialects.base import Dialect
from rota.store.dialects.mysql import MySQLDialect
from rota.store.dialects.postgresql import PostgreSQLDialect
from rota.store.dialects.sqlite import SQLiteDialect

BACKENDS: dict[str, type[Dialect]] = {
    "sqlite": SQLiteDialect,
    "postgresql": PostgreSQLDialect,
    "postgres": PostgreSQLDialect,
    "mysql": MySQLDialect,
    "mariadb": MySQLDialect,
}

__all__ = ["Dialect", "MySQLDialect", "PostgreSQLDialect", "SQLiteDialect", "dialect_for"]


def dialect_for(url: URL) -> Dialect:
    backend = url.get_backend_name()
    if backend not in BACKENDS:
        raise ConfigError(f"unsupported database {backend!r}: use sqlite, postgresql or mysql")
    return BACKENDS[backend]()
