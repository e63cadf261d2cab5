"""What a task, queue or schedule name, or a unique key, may be.

The database compares names (unique indexes, filters), and the backends disagree at the edges:
MySQL's PAD SPACE collations take ``"k"`` and ``"k "`` for the same key, PostgreSQL refuses
NUL, and no driver can send a lone surrogate. Refusing such names when they are given keeps
every backend exact; control characters are refused too, as they would forge log lines.
"""

from __future__ import annotations

from rota.errors import RotaError

LIMITS = {"task": 255, "queue": 64, "schedule": 255, "unique_key": 255}
"""Characters of each kind of name; the schema's columns are this wide."""


def name_problem(kind: str, value: object) -> str | None:
    """Why ``value`` cannot be a ``kind`` name, or ``None`` when it can."""
    if not isinstance(value, str):
        return f"{kind} must be a string, got {type(value).__name__}"
    limit = LIMITS[kind]
    if not 0 < len(value) <= limit:
        return f"{kind} must be 1 to {limit} characters, got {len(value)}"
    if value[0].isspace() or value[-1].isspace():
        return f"{kind} {value!r} starts or ends with whitespace"
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        return f"{kind} {value!r} contains a control character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{kind} {value!r} is not valid Unicode"
    return None


def check_name(kind: str, value: object, error: type[RotaError]) -> str:
    """``value`` itself when it is a valid ``kind`` name; otherwise raise ``error``."""
    problem = name_problem(kind, value)
    if problem is not None:
        raise error(problem)
    return str(value)
