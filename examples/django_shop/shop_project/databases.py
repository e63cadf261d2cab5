"""``DATABASES["default"]`` from one URL (``$SHOP_DATABASE_URL``), so the shop runs on SQLite,
MariaDB/MySQL or PostgreSQL without editing its settings.

``sqlite:///db.sqlite3`` (a path under the project; ``sqlite:////abs/path`` for an absolute
one), ``mysql://user:pw@host:3306/shop`` (mysqlclient, Django's driver),
``mysql+pymysql://...`` (PyMySQL standing in for mysqlclient) and
``postgresql://user:pw@host:5432/shop``. rota needs no URL of its own: it derives it from
these settings, through the same driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

ENGINES = {
    "sqlite": "django.db.backends.sqlite3",
    "mysql": "django.db.backends.mysql",
    "mysql+pymysql": "django.db.backends.mysql",
    "postgresql": "django.db.backends.postgresql",
}


def database(url: str, base: Path) -> dict[str, Any]:
    """The settings of the database at ``url``; a relative SQLite path is under ``base``."""
    parts = urlsplit(url)
    if parts.scheme not in ENGINES:
        raise ValueError(f"SHOP_DATABASE_URL: unknown scheme {parts.scheme!r}: {sorted(ENGINES)}")
    if parts.scheme == "sqlite":
        # Transactions take the write lock when they begin: one that read first and then
        # wrote after rota's worker committed would fail at once with "database is locked".
        options = {"transaction_mode": "IMMEDIATE", "timeout": 20}
        return {"ENGINE": ENGINES["sqlite"], "NAME": str(base / parts.path[1:]), "OPTIONS": options}
    if parts.scheme == "mysql+pymysql":
        import pymysql

        pymysql.install_as_MySQLdb()  # before Django's MySQL backend imports MySQLdb
    mysql = parts.scheme.startswith("mysql")
    return {
        "ENGINE": ENGINES[parts.scheme],
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": parts.port or "",
        "OPTIONS": {"charset": "utf8mb4"} if mysql else {},
        "TEST": {"CHARSET": "utf8mb4"} if mysql else {},
    }
