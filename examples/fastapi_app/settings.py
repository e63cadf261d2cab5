"""The service's settings, read from the environment once, at start-up.

The names are rota's own where rota has one (``$ROTA_DATABASE_URL``, ``$ROTA_DASHBOARD_TOKEN``),
so the ``rota`` command run in the same environment (``rota jobs``, ``rota check``) looks at
the same database.  There is no default token: a dashboard that can retry and cancel jobs is
not served to anyone who finds the port.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_URL = "sqlite:///fastapi_app.db"


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str
    table_prefix: str
    dashboard_token: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        """``$ROTA_DATABASE_URL`` (a SQLite file here unless set), ``$ROTA_TABLE_PREFIX``
        (``rota_``) and ``$ROTA_DASHBOARD_TOKEN`` (required, 16 characters or more)."""
        token = environ.get("ROTA_DASHBOARD_TOKEN", "")
        if not token:
            raise RuntimeError(
                "set ROTA_DASHBOARD_TOKEN (python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))') to serve the dashboard at /rota"
            )
        return cls(
            database_url=environ.get("ROTA_DATABASE_URL") or DEFAULT_URL,
            table_prefix=environ.get("ROTA_TABLE_PREFIX") or "rota_",
            dashboard_token=token,
        )
