"""The table where test apps record what their handlers did, shared with the tests."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table


def runs_table(prefix: str) -> Table:
    return Table(
        f"{prefix}runs",
        MetaData(),
        Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
        Column("tick", String(40), nullable=False),
        Column("pid", Integer, nullable=False),
        Column("started", String(40), nullable=False),
    )
