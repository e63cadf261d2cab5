"""Database URLs: parsed without ever quoting a password, given a driver, described and masked.

A URL may hold a password, so every message, ``repr`` and log line that names a database goes
through here; callers outside the store never handle SQLAlchemy's ``URL`` themselves.
"""

from __future__ import annotations

import contextlib

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from rota.errors import ConfigError
from rota.store.dialects import dialect_for


def parse_url(url: str | URL) -> URL:
    """``make_url`` whose error never quotes the URL, which may hold a password."""
    try:
        return make_url(url)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        raise ConfigError(
            "not a database URL rota can use, e.g. mysql://user:password@host/database"
        ) from None


def normalise_url(url: str | URL) -> URL:
    """The URL with the driver rota ships an extra for when it names none; a URL rota cannot
    use (an in-memory SQLite database, an unknown backend) is a ``ConfigError``."""
    parsed = parse_url(url)
    return dialect_for(parsed).normalise(parsed)


def describe_url(url: str | URL) -> str:
    """The URL without its password, for logs and errors."""
    parsed = parse_url(url)
    host = f"{parsed.host}:{parsed.port}" if parsed.port else (parsed.host or "")
    return f"{parsed.get_backend_name()} database {parsed.database!r} on {host or 'local file'}"


def masked_url(url: str) -> str:
    """``url`` with its password, and any password in its query string, shown as ``***``."""
    try:
        parsed = parse_url(url)
    except ConfigError:
        return "***"
    secrets = {key: "***" for key in parsed.query if "pass" in key.lower()}
    if secrets:
        parsed = parsed.update_query_dict(secrets)
    return parsed.render_as_string(hide_password=True)


def scrub(text: str, url: str) -> str:
    """``text`` without the URL's password, should a driver ever repeat it."""
    with contextlib.suppress(ConfigError):
        password = parse_url(url).password
        if password:
            return text.replace(str(password), "***")
    return text


def database_file(url: str) -> str | None:
    """The local file the URL names (SQLite), which connecting would create; else ``None``."""
    parsed = parse_url(url)
    return dialect_for(parsed).database_file(parsed)
