"""Database URLs as SQLAlchemy takes them: parsed without ever quoting a password, given a
driver, and searched for every form of their secrets.

A URL may hold a password, so every message, ``repr`` and log line that names a database goes
through here or through ``rota.core.urls`` (which describes and masks a URL without SQLAlchemy);
callers outside the store never handle SQLAlchemy's ``URL`` themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from rota.core.urls import NOT_A_URL, UrlParts, description, several_hosts
from rota.errors import ConfigError
from rota.store.dialects import dialect_for
from rota.store.secrets import hide

USER_INFO = re.compile(r"^[\w+]+://[^:/]*:(?P<password>[^@]*)@")
"""The password as written in a URL string (SQLAlchemy's own pattern), parsed or not."""


def parse_url(url: str | URL) -> URL:
    """``make_url`` whose error never quotes the URL, which may hold a password."""
    try:
        return make_url(url)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        raise ConfigError(several_hosts(url) or NOT_A_URL) from None


def url_from_parts(
    drivername: str,
    *,
    username: str | None = None,
    password: str | None = None,
    host: str | None = None,
    port: int | None = None,
    database: str | None = None,
    query: Mapping[str, str] | None = None,
) -> str:
    """A URL string from its parts, for a caller that holds them apart (Django's ``DATABASES``).

    Built with SQLAlchemy's ``URL.create``, which quotes each part as it must be: a password
    holding ``@``, ``:``, ``/`` or ``%`` reads back as itself, where string formatting would
    give another URL, or a wrong one.
    """
    url = URL.create(
        drivername,
        username=username,
        password=password,
        host=host,
        port=port,
        database=database,
        query=dict(query or {}),
    )
    return url.render_as_string(hide_password=False)


def normalise_url(url: str | URL) -> URL:
    """The URL with the driver rota ships an extra for when it names none; a URL rota cannot
    use (an in-memory SQLite database, an unknown backend) is a ``ConfigError``."""
    parsed = parse_url(url)
    return dialect_for(parsed).normalise(parsed)


def describe_url(url: str | URL) -> str:
    """The URL without its password, for logs and errors (``rota.core.urls.describe_url``, for
    a URL SQLAlchemy parsed too)."""
    parsed = parse_url(url)
    query = dict(parsed.query)
    return description(
        UrlParts(parsed.drivername, None, None, parsed.host, parsed.port, parsed.database, query)
    )


def url_secrets(url: str | URL) -> list[str]:
    """Every secret a URL holds: its password decoded and as written, and the values of its
    query parameters named like a password (``ssl_key_password=``)."""
    found: list[str] = []
    if isinstance(url, str):
        written = USER_INFO.match(url)
        if written is not None:
            found.append(written.group("password"))
    try:
        parsed = parse_url(url)
    except ConfigError:
        return found
    if parsed.password:
        found.append(str(parsed.password))
    for key, value in parsed.query.items():
        if "pass" in key.lower():
            found += [value] if isinstance(value, str) else list(value)
    return [secret for secret in found if secret]


def holds_password(url: str) -> bool:
    """Whether ``url`` carries a secret; one rota cannot parse counts if it names a user."""
    try:
        parse_url(url)
    except ConfigError:
        return "@" in url.partition("://")[2]
    return bool(url_secrets(url))


def scrub(text: str, url: str | URL) -> str:
    """``text`` without any form of the URL's secrets (``rota.store.secrets``), should a driver
    or an encoding error ever repeat one, whole or in part."""
    return hide(text, url_secrets(url))


def database_file(url: str) -> str | None:
    """The local file the URL names (SQLite), which connecting would create; else ``None``."""
    parsed = parse_url(url)
    return dialect_for(parsed).database_file(parsed)
