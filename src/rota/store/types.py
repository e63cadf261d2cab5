"""Portable column types: UTC timestamps with microseconds, BIGINT ids, long text."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, cast

from sqlalchemy import BigInteger, DateTime, Integer, Text
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import Dialect as SqlDialect
from sqlalchemy.types import TypeDecorator


class SQLiteDateTime(sqlite.DATETIME):
    """SQLite's ``DATETIME``, read from a connection that has already parsed it: a Django
    connection lent to rota (``borrowed``) parses declared types itself (``detect_types``)."""

    def result_processor(self, dialect: SqlDialect, coltype: object) -> Any:
        parse = super().result_processor(dialect, coltype)
        if parse is None:
            return None
        return lambda value: value if isinstance(value, datetime) else parse(value)


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC in Python, naive UTC in the database (``DATETIME(6)`` on MySQL).

    Naive storage keeps every dialect comparable with plain operators and free of the
    session time zone; MySQL ``TIMESTAMP`` would also stop at 2038.
    """

    impl = (
        DateTime()
        .with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
        .with_variant(SQLiteDateTime(), "sqlite")  # type: ignore[no-untyped-call]
    )
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: SqlDialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} given to the store; pass aware UTC")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_literal_param(self, value: datetime | None, dialect: SqlDialect) -> str:
        """Rendered into SQL text only for EXPLAIN; the impl's literal processor quotes it."""
        naive = self.process_bind_param(value, dialect)
        return cast(str, naive)

    def process_result_value(self, value: datetime | None, dialect: SqlDialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc)


BigId = BigInteger().with_variant(Integer(), "sqlite")
LongText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
