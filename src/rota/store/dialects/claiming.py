"""The UPDATE statements a claim runs, kept built, and its rows as dicts.

A claim runs for every few dozen jobs a worker takes, with new values each time (its time, its
lease) but the same statements: building them again, with their cache keys, cost more CPU than
the database's work (issue 33). So each is built once, its values as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Select, Table, bindparam, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.sql.dml import ReturningUpdate, Update

from rota.store.kept import Kept

KEPT_CLAIMS = 512
"""Claim statements kept built of each kind (one per kept candidates statement)."""


class ClaimStatements:
    def __init__(self) -> None:
        self._returning: Kept[ReturningUpdate[Any]] = Kept(KEPT_CLAIMS)
        self._by_id: Kept[Update] = Kept(KEPT_CLAIMS)

    def returning(
        self, table: Table, candidates: Select[Any], values: Mapping[str, Any]
    ) -> ReturningUpdate[Any]:
        """``UPDATE ... WHERE id IN (candidates) RETURNING *``, for each candidates statement
        (kept by the claim) and the columns ``values`` sets."""

        def build() -> ReturningUpdate[Any]:
            ids = candidates.with_only_columns(table.c.id)
            statement = update(table).where(table.c.id.in_(ids)).values(_claimed(table, values))
            return statement.returning(*table.c)

        return self._returning.get((id(candidates), tuple(values)), build, on=candidates)

    def by_id(self, table: Table, values: Mapping[str, Any]) -> Update:
        """``UPDATE ... WHERE id IN (:ids)`` of rows a claim read and locked."""

        def build() -> Update:
            by_id = table.c.id.in_(bindparam("ids", expanding=True))
            return update(table).where(by_id).values(_claimed(table, values))

        return self._by_id.get((table.name, tuple(values)), build)


def given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of a kept claim statement that carry ``values``."""
    return {f"set_{name}": value for name, value in values.items()}


def _claimed(table: Table, values: Mapping[str, Any]) -> dict[str, Any]:
    """What a claim sets: ``values``' columns, as parameters (``given``), and one attempt more."""
    changes: dict[str, Any] = {
        name: bindparam(f"set_{name}", type_=table.c[name].type) for name in values
    }
    changes["attempt"] = table.c.attempt + 1
    return changes


def row_dicts(result: CursorResult[Any]) -> list[dict[str, Any]]:
    """A result's rows as dicts by column name: zipped with the names read once, at about half
    the cost of a dict of each row's mapping (a claim makes one a job)."""
    names = tuple(result.keys())
    return [dict(zip(names, row, strict=True)) for row in result]
