"""The statements rota sends, as MySQL 8 would receive them, and what MySQL 8 would refuse.

No MySQL 8 server runs here: the store's statements are recorded where they are executed on
MariaDB, and each is compiled again by SQLAlchemy's MySQL dialect as it is once connected to a
MySQL server of the given version. ``initialize`` is where the dialect reads the version and
sets the flags that change the SQL it writes (the upsert's row alias from 8.0.20, ``FOR
SHARE`` for ``LOCK IN SHARE MODE`` from 8.0.1); ``dialect_at`` runs that part of it
(``_initialize_mysql``, private to SQLAlchemy) without a server.

Statements sent as plain strings (``exec_driver_sql``) are checked as they are.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import event
from sqlalchemy.dialects.mysql.pymysql import MySQLDialect_pymysql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import UpdateBase

VERSIONS = ("8.0.19", "8.0.36", "8.4.3")
"""The first MySQL that takes the upsert's row alias, the 8.0 of our users, and the LTS after."""
ROW_ALIAS_FROM = (8, 0, 20)
"""SQLAlchemy writes the row alias from 8.0.20, where ``VALUES()`` in an upsert is deprecated
(8.0.19 takes the alias too; rota's upserts refer to no value of the new row, so need neither)."""
MYSQL = ("mysql", "mariadb")
CHECKED: set[str] = set()
"""The statements already found right, by their SQL for the first version."""
UPSERT = "ON DUPLICATE KEY UPDATE"
IF_EXISTS = re.compile(r"\bIF\s+(NOT\s+)?EXISTS\b", re.IGNORECASE)
IF_EXISTS_TAKEN = re.compile(r"^\s*(CREATE|DROP)\s+(TABLE|DATABASE|VIEW|TRIGGER|FUNCTION)\b", re.I)
"""What MySQL 8 takes ``IF [NOT] EXISTS`` on; MariaDB also on indexes and columns."""


@functools.cache
def dialect_at(version: str) -> MySQLDialect_pymysql:
    """SQLAlchemy's MySQL dialect (PyMySQL's, rota's default) as connected to MySQL
    ``version``."""
    dialect = MySQLDialect_pymysql()
    dialect._parse_server_version(version)
    dialect._casing = 0  # lower_case_table_names, read from the server too
    dialect._initialize_mysql(cast(Connection, None))  # reads only the version
    return dialect


def problems(sql: str, version: tuple[int, ...]) -> list[str]:
    """Why MySQL ``version`` would refuse or deprecate ``sql``; none when it takes it."""
    found = []
    if re.search(r"\bRETURNING\b", sql, re.IGNORECASE):
        found.append("RETURNING, which MySQL has not")
    if "LOCK IN SHARE MODE" in sql.upper():
        found.append("LOCK IN SHARE MODE, deprecated by FOR SHARE")
    if IF_EXISTS.search(sql) and not IF_EXISTS_TAKEN.match(sql):
        found.append("IF [NOT] EXISTS where only MariaDB takes it")
    before, upsert, update = sql.upper().partition(UPSERT)
    if upsert and "VALUES(" in update.replace(" ", ""):
        found.append("VALUES() in an upsert, deprecated from 8.0.20")
    if upsert and version >= ROW_ALIAS_FROM and not before.rstrip().endswith(" AS NEW"):
        found.append("an upsert without its row alias")
    return found


def compiled(element: ClauseElement, keys: tuple[str, ...], version: str) -> str:
    """``element`` as SQLAlchemy writes it for MySQL ``version``, with the columns given
    (``keys``: those of its parameters, as at execution)."""
    options: dict[str, Any] = {"column_keys": list(keys)} if isinstance(element, UpdateBase) else {}
    return str(element.compile(dialect=dialect_at(version), **options))


@dataclass
class Recorded:
    """The statements executed on MySQL or MariaDB connections while ``recording``."""

    elements: dict[tuple[int, tuple[str, ...]], ClauseElement] = field(default_factory=dict)
    """Each statement once, by identity and the columns of its parameters."""
    strings: dict[str, None] = field(default_factory=dict)

    def rendered(self) -> list[dict[str, str]]:
        """Each recorded statement by version, as ``compiled``; strings as they were sent."""
        each = [
            {version: compiled(element, keys, version) for version in VERSIONS}
            for (_, keys), element in self.elements.items()
        ]
        return each + [dict.fromkeys(VERSIONS, sql) for sql in self.strings]

    def problems(self) -> list[str]:
        """What MySQL would refuse of each statement not found right before in this process
        (known by its SQL for the first version: the same construct of another test)."""
        found = []
        for (_, keys), element in self.elements.items():
            first = compiled(element, keys, VERSIONS[0])
            if first in CHECKED:
                continue
            each = {VERSIONS[0]: first} | {v: compiled(element, keys, v) for v in VERSIONS[1:]}
            wrong = statement_problems(each)
            found += wrong
            if not wrong:
                CHECKED.add(first)
        for sql in self.strings:
            found += statement_problems(dict.fromkeys(VERSIONS, sql))
        return found


def statement_problems(statement: dict[str, str]) -> list[str]:
    """``problems`` of one statement as each version has it."""
    return [
        f"MySQL {version}: {problem}: {sql}"
        for version, sql in statement.items()
        for problem in problems(sql, tuple(map(int, version.split("."))))
    ]


@contextlib.contextmanager
def recording() -> Iterator[Recorded]:
    """Record what every engine of this process sends to MySQL or MariaDB meanwhile."""
    recorded = Recorded()

    def element(
        conn: Connection, clauseelement: Any, multiparams: Any, params: Any, execution_options: Any
    ) -> None:
        if conn.dialect.name in MYSQL and isinstance(clauseelement, ClauseElement):
            first = multiparams[0] if multiparams else params
            recorded.elements[id(clauseelement), tuple(sorted(first or {}))] = clauseelement

    def string(
        conn: Connection,
        cursor: Any,
        statement: str,
        parameters: Any,
        context: Any,
        executemany: bool,
    ) -> None:
        if conn.dialect.name in MYSQL and context.compiled is None:
            recorded.strings[statement] = None

    event.listen(Engine, "before_execute", element)
    event.listen(Engine, "before_cursor_execute", string)
    try:
        yield recorded
    finally:
        event.remove(Engine, "before_execute", element)
        event.remove(Engine, "before_cursor_execute", string)
