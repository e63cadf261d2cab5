"""What a task, queue, schedule or namespace name, or a unique key, may be.

The database compares names (unique indexes, filters), and the backends disagree at the edges:
MySQL's PAD SPACE collations take ``"k"`` and ``"k "`` for the same key, PostgreSQL refuses
NUL, and no driver can send a lone surrogate. Refusing such names when they are given keeps
every backend exact; control and format characters are refused too.
"""

from __future__ import annotations

import unicodedata

from rota.errors import RotaError

INVISIBLE = {"Cc": "a control character", "Cf": "a format character"}
"""C0 and C1 controls forge log lines; format characters (zero-width, bidi overrides) make two
different names look alike."""
LIMITS = {
    "task": 255,
    "queue": 64,
    "schedule": 255,
    "unique_key": 255,
    "actor": 255,
    "namespace": 64,
    "step": 200,
    "signal": 190,
    "tag": 100,
}
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
    for char in value:
        category = unicodedata.category(char)
        if category == "Cs":
            return f"{kind} {value!r} is not valid Unicode"
        if category in INVISIBLE:
            return f"{kind} {value!r} contains {INVISIBLE[category]} (U+{ord(char):04X})"
    return None


def check_name(kind: str, value: object, error: type[RotaError]) -> str:
    """``value`` itself when it is a valid ``kind`` name; otherwise raise ``error``."""
    problem = name_problem(kind, value)
    if problem is not None:
        raise error(problem)
    return str(value)
