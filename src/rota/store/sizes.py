"""What a result costs in a statement, and results grouped into statements the server takes.

A batch of successes with results is one ``UPDATE`` per group, each row given its result by a
``CASE`` (``jobs``).  A MySQL driver writes the values into the statement's text and sends it as
one packet, which the server refuses if it is larger than ``max_allowed_packet`` (16 MiB on
MariaDB 10.11); PostgreSQL and SQLite bind values apart, rota keeping to a sane bound there
(``Dialect.statement_limit``).  A result is measured as it is sent: its UTF-8 bytes, plus one
for each character a MySQL driver escapes with a backslash (a JSON string's quotes and
backslashes, above all), and groups are cut so that each statement, SQL included, stays below
the server's limit.  A result too large for any statement is found here, before anything is
sent: the server would refuse it, and drop the connection.
"""

from __future__ import annotations

from collections.abc import Sequence

from rota.core.transitions import Transition
from rota.store.base import StatementTooLarge

STATEMENT_SLACK = 64 * 1024
"""Room kept in each statement for its SQL and the values besides the results (a quarter of
the statement on a server that takes less than 256 KiB)."""
PER_RESULT = 64
"""A result's own SQL besides its value: ``WHEN <id> THEN '...'`` and its id in the ``IN``."""
ESCAPED = ("\\", "'", '"', "\0", "\n", "\r", "\x1a")
"""The characters MySQL drivers send with a backslash before them."""


def sent_bytes(text: str) -> int:
    """The most bytes ``text`` takes in a statement: UTF-8, one more per escaped character."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return size + sum(text.count(character) for character in ESCAPED)


def by_size(transitions: Sequence[Transition], limit: int) -> list[list[Transition]]:
    """``transitions`` (successes with results) in groups whose statement stays within
    ``limit`` bytes, in order; ``StatementTooLarge`` naming the jobs whose result alone would
    not fit in one."""
    budget = limit - min(STATEMENT_SLACK, limit // 4)
    groups: list[list[Transition]] = []
    too_large: list[int] = []
    size = 0
    for transition in transitions:
        cost = sent_bytes(transition.result or "") + PER_RESULT
        if cost > budget:
            too_large.append(transition.job_id)
            continue
        if not groups or size + cost > budget:
            groups.append([])
            size = 0
        groups[-1].append(transition)
        size += cost
    if too_large:
        raise StatementTooLarge(
            f"the result of job(s) {', '.join(map(str, too_large))} is larger than one "
            f"statement may be on this database server ({limit} bytes, MySQL's "
            "max_allowed_packet), however it is batched",
            job_ids=too_large,
        )
    return groups
