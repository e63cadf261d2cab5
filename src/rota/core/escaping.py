"""Text from the database or from a user, made safe to print on a terminal or in a log line.

Stored text (error messages, tracebacks, arguments, names written by another service, by hand
or by an older rota) may hold characters that act instead of showing: ESC starts sequences
that clear the screen, recolour it or set its title; CR and backspace overwrite what was
printed; a newline forges a log line; C1 controls (U+0080-U+009F) are escapes to some
terminals; bidi controls and other format characters (zero-width ones, tags) reorder or hide
text so that it reads as something else; U+2028/U+2029 end lines for ``str.splitlines`` and
JavaScript. Every such character (Unicode categories Cc, Cf, Zl, Zp, and lone surrogates, which
no terminal can be sent) is shown as the escape ``repr`` writes for it (``\\x1b``, ``\\r``,
``\\u202e``): the form a name quoted with ``!r`` in an error message already has.

A backslash is left as it is: this output is for people, a literal ``\\x1b`` mistaken for an
escaped ESC harms nobody, and doubling every backslash of a Windows path would. ``--json`` and
JSON logs carry the exact text.
"""

from __future__ import annotations

import json
import unicodedata

UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""The categories of characters that act on a terminal or a log reader instead of showing."""


def unsafe(char: str) -> bool:
    return unicodedata.category(char) in UNSAFE


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` with each unsafe character escaped; with ``newlines``, ``\\n`` is kept (the
    lines of a traceback), every other one is still escaped."""
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(
        repr(char)[1:-1] if unsafe(char) and not (newlines and char == "\n") else char
        for char in text
    )


def visible_json(dumped: str) -> str:
    """The output of ``json.dumps(..., ensure_ascii=False)`` with each unsafe character written
    as a ``\\u`` escape: the same JSON value, readable in any language, and nothing in it acts
    on a terminal. ``json.dumps`` escapes C0 controls itself but not DEL, C1 controls, format
    characters nor U+2028/U+2029, and writes a lone surrogate raw (which cannot even be encoded
    as UTF-8). A raw newline in its output is layout (``indent``), never inside a string."""
    if dumped.isprintable():
        return dumped
    return "".join(
        json.dumps(char)[1:-1] if char != "\n" and unsafe(char) else char for char in dumped
    )
