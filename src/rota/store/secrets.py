"""Every form in which a secret could reach a message, and text with all of them hidden.

A password is seldom repeated as typed: a driver's encoding error quotes the run of characters it
could not encode (``'Секрет'`` of ``P@ss:w0rd/Секрет``), a ``repr`` escapes it (``\\u0421``),
bytes show as ``\\xd0\\xa1``, a URL quotes it (``%D0%A1``) and a wrong decoding turns it into
mojibake (``Ð¡``).  Replacing only the password as typed leaves all of those, so ``hide``
replaces each of them, for the whole secret and for each long enough part of it.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_PART = 4
"""Shorter parts are not hidden on their own: replacing them would garble ordinary words."""
PART_SEPARATORS = re.compile(r"[\s/@:?#&=%;,]+")
SCRIPT_RUNS = re.compile(r"[\x00-\x7f]+|[\x80-\xff]+|[^\x00-\xff]+|[^\x00-\x7f]+")
"""Runs of ASCII, of Latin-1 beyond ASCII, of what Latin-1 cannot encode, and of non-ASCII:
what an ``ascii``, ``latin-1`` or ``utf-8`` encoding error quotes of a string."""
SQLALCHEMY_QUOTED = re.compile(r"[:@/]")


def encoded(text: str) -> bytes:
    """``text`` as the bytes it came from: UTF-8, with the undecodable bytes that Python keeps as
    lone surrogates (``surrogateescape``, as in ``os.environ`` and ``sys.argv``) restored."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def decoded(value: object) -> str:
    """A secret as text: bytes as ``encoded`` made them, a string as it is, anything else
    (a number, ``None``) as no secret at all."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else ""


def _sqlalchemy_quote(text: str) -> str:
    """How SQLAlchemy 2.0's ``URL.render_as_string`` quotes a password (2.1: ``quote``)."""
    return SQLALCHEMY_QUOTED.sub(lambda match: f"%{ord(match.group()):X}", text)


def _inner(rendered: str) -> str:
    """A quoted literal without its quotes (``'x'``, ``"x"``, ``b'x'``)."""
    return rendered[2:-1] if rendered.startswith("b") else rendered[1:-1]


ESCAPES: tuple[Callable[[str], str], ...] = (
    lambda text: text,
    lambda text: _inner(repr(text)),
    lambda text: _inner(ascii(text)),
    lambda text: _inner(json.dumps(text)),
    lambda text: text.encode("unicode_escape").decode("ascii"),
    lambda text: quote(encoded(text), safe=""),
    lambda text: quote(encoded(text)),
    lambda text: quote(encoded(text), safe=" +"),
    lambda text: quote_plus(encoded(text)),
    _sqlalchemy_quote,
)
"""Ways a string is escaped in a message, a ``repr``, JSON, a log line or a URL; each one takes
any string, lone surrogates included (URL quoting is of the bytes ``encoded`` restores)."""


def decodings(text: str) -> list[str]:
    """``text`` and what its bytes look like read in a wrong encoding (mojibake)."""
    raw = encoded(text)
    return [text, raw.decode("latin-1"), raw.decode("cp1252", "replace")]


def spellings(text: str) -> set[str]:
    """Every escaped form of ``text``, of its mojibake, and of its bytes (``repr``, hex)."""
    raw = encoded(text)
    found = {escape(shown) for shown in decodings(text) for escape in ESCAPES}
    found |= {_inner(repr(raw)), raw.hex(), raw.hex().upper()}
    return found


def parts(secret: str) -> set[str]:
    """The secret's runs of one script and its pieces between separators, stripped of
    punctuation, as long as they are at least ``MIN_PART`` characters."""
    pieces = set(SCRIPT_RUNS.findall(secret)) | set(PART_SEPARATORS.split(secret))
    stripped = {piece.strip(string.punctuation + string.whitespace) for piece in pieces}
    return {piece for piece in stripped if len(piece) >= MIN_PART}


def forms(secrets: Iterable[str]) -> list[str]:
    """What ``hide`` looks for, longest first so that no longer form is left half replaced."""
    found: set[str] = set()
    for secret in secrets:
        if secret:
            found |= spellings(secret)
            for part in parts(secret):
                found |= spellings(part)
    return sorted((form for form in found if form), key=len, reverse=True)


def hide(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret replaced by ``***``."""
    for form in forms(secrets):
        text = text.replace(form, MASK)
    return text
