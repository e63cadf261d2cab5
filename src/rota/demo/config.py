"""Settings of the demo service, read once from the environment, and the ``Rota`` built on them.

Every other module imports ``app`` from here, so the tasks, the entry point and ``rota worker``
all share one instance and one set of settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from rota import Rota

DEFAULT_DATABASE_URL = "sqlite:///demo.db"


@dataclass(frozen=True)
class Settings:
    database_url: str
    concurrency: int
    log_level: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        """``DEMO_*`` variables win so the demo never touches the database of another app."""
        return cls(
            database_url=environ.get("DEMO_DATABASE_URL")
            or environ.get("ROTA_DATABASE_URL")
            or DEFAULT_DATABASE_URL,
            concurrency=_positive_int(environ, "DEMO_CONCURRENCY", 4),
            log_level=environ.get("DEMO_LOG_LEVEL", "INFO").upper(),
        )


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """Fail at start with the variable's name rather than later with a bare ``int()`` error."""
    raw = environ.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


settings = Settings.from_env()
app = Rota(settings.database_url, concurrency=settings.concurrency)
