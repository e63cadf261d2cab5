"""MySQL's bulk insert: rows written by multi-row INSERTs, their ids read back.

MySQL has no ``RETURNING``: a multi-row INSERT's ids are the first, which ``LAST_INSERT_ID()``
gives, and those after it, ``auto_increment_increment`` apart (above 1 on Galera).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Table
from sqlalchemy.engine import Connection

from rota.store.dialects.base import insert_statement

INSERT_CHUNK = 1000
STATEMENT_BYTES = 500_000
MYSQLDB_STATEMENT_BYTES = 60_000
"""mysqlclient's chunks, kept below the 64 KiB past which it once split an ``executemany``."""
ROW_OVERHEAD_BYTES = 1_000
WRITTEN_BY_US = ("format", "pyformat")
"""The drivers' placeholder styles of ``%s``, which ``_driver_rows`` writes (PyMySQL's and
mysqlclient's); SQLAlchemy writes any other's."""


def insert_ids(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
    """Write ``rows`` by multi-row INSERTs of at most ``INSERT_CHUNK`` rows and a bounded size;
    their ids, in order."""
    ids: list[int] = []
    step = _id_step(connection) if len(rows) > 1 else 1
    budget = MYSQLDB_STATEMENT_BYTES if connection.dialect.driver == "mysqldb" else None
    for chunk in _statement_sized(rows, budget or STATEMENT_BYTES):
        if len(chunk) == 1:
            ids.append(connection.execute(insert_statement(table), chunk[0]).lastrowid)
            continue
        if connection.dialect.paramstyle in WRITTEN_BY_US:
            connection.exec_driver_sql(*_driver_rows(connection, table, chunk))
        else:  # another driver's placeholders (MariaDB Connector/Python's ``?``)
            connection.execute(insert_statement(table), chunk)
        first = int(connection.exec_driver_sql("SELECT LAST_INSERT_ID()").scalar_one())
        ids.extend(range(first, first + len(chunk) * step, step))
    return ids


def _id_step(connection: Connection) -> int:
    """The id increment (above 1 on Galera and other multi-primary set-ups)."""
    return int(connection.exec_driver_sql("SELECT @@auto_increment_increment").scalar_one())


def _driver_rows(
    connection: Connection, table: Table, rows: list[dict[str, Any]]
) -> tuple[str, tuple[Any, ...]]:
    """A chunk as one multi-row INSERT and its values in order, each converted by its column's
    bind processor (an aware time to the naive UTC the column holds): what bare SQL sends,
    without SQLAlchemy's processing of each row's parameters nor the driver's ``executemany``
    formatting each row apart (together about a tenth of a bulk enqueue's CPU, issue 33).
    Every row has the first's keys."""
    names = list(rows[0])
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    group = "(" + ", ".join(["%s"] * len(names)) + ")"
    columns = ", ".join(map(quote, names))
    sql = f"INSERT INTO {quote(table.name)} ({columns}) VALUES {', '.join([group] * len(rows))}"
    converted = [table.c[name].type.bind_processor(dialect) for name in names]
    processors = list(zip(names, converted, strict=True))
    values = tuple(
        row[name] if convert is None else convert(row[name])
        for row in rows
        for name, convert in processors
    )
    return sql, values


def _statement_sized(rows: list[dict[str, Any]], budget: int) -> Iterator[list[dict[str, Any]]]:
    """Chunks that the driver sends as one INSERT statement each.

    ``LAST_INSERT_ID()`` names the first id of the last statement only, so no chunk may be
    split by the driver's statement-size limit (PyMySQL: 1,024,000 bytes; mysqlclient: 64 KiB),
    which each chunk's worst-case size keeps under ``budget``.
    """
    chunk: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        text_size = sum(len(value) for value in row.values() if isinstance(value, str))
        row_size = text_size * 4 + ROW_OVERHEAD_BYTES  # UTF-8 and escaping, at worst
        if chunk and (len(chunk) == INSERT_CHUNK or size + row_size > budget):
            yield chunk
            chunk, size = [], 0
        chunk.append(row)
        size += row_size
    if chunk:
        yield chunk
