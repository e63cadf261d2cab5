"""Settings of the test project: one alias per test database, each test picking its own.

``default`` is a SQLite file (not Django's in-memory test database, which a second connection
could not open), ``mariadb`` and ``postgres`` are the servers of ``tests.conftest.SERVERS``.
Their test databases are named after this process, so that two test runs on one server never
drop each other's. ``$ROTA_TEST_DJANGO_DIR`` and ``$ROTA_TEST_DJANGO_PREFIX`` let a
``manage.py`` started by a test share its files and tables; ``$ROTA_TEST_DJANGO_TASKS`` gives
it a ``TASKS`` on ``RotaBackend`` and Django's task log lines on its output.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from sqlalchemy.engine import make_url

from tests.conftest import SERVERS

_scratch = tempfile.TemporaryDirectory(prefix="rota-django-")  # removed when the process exits
DIRECTORY = os.environ.get("ROTA_TEST_DJANGO_DIR") or _scratch.name
TEST_DATABASE = f"rota_django_{os.getpid()}"


def server(backend: str, engine: str) -> dict[str, Any]:
    variable, default = SERVERS[backend]
    url = make_url(os.environ.get(variable, default))
    return {
        "ENGINE": engine,
        "NAME": url.database,
        "USER": url.username or "",
        "PASSWORD": url.password or "",
        "HOST": url.host or "",
        "PORT": url.port or "",
        "TEST": {
            "NAME": TEST_DATABASE,
            "CHARSET": "utf8mb4" if backend == "mariadb" else None,
            "DEPENDENCIES": [],  # a test may ask for this database alone, without default's
        },
    }


SECRET_KEY = "rota-tests"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["rota.contrib.django", "tests.django.shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(DIRECTORY, "main.sqlite3"),
        "TEST": {"NAME": os.path.join(DIRECTORY, "test.sqlite3")},
    },
    "mariadb": server("mariadb", "django.db.backends.mysql"),
    "postgres": server("postgres", "django.db.backends.postgresql"),
}
ROTA = {
    "DATABASE": "default",
    "TABLE_PREFIX": os.environ.get("ROTA_TEST_DJANGO_PREFIX", "rota_"),
    "POLL_INTERVAL": 0.05,
    "CONNECT_TIMEOUT": 5,
}

if os.environ.get("ROTA_TEST_DJANGO_TASKS"):
    TASKS = {
        "default": {
            "BACKEND": "rota.contrib.django.backend.RotaBackend",
            "QUEUES": ["default", "reports"],
        }
    }
    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "handlers": {"console": {"class": "logging.StreamHandler"}},
        "loggers": {"django.tasks": {"handlers": ["console"], "level": "INFO"}},
    }
