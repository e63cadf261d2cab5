"""A project as ``startproject`` makes one, with rota and its ``django.tasks`` backend.

``$TRIAL_DATABASE_URL`` picks the database: a server's URL (its test database named
``$TRIAL_TEST_NAME``), or none for a SQLite file, whose test database is Django's in-memory one.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "trial"
DEBUG = True
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "trial_site.urls"
INSTALLED_APPS = ["rota.contrib.django", "shop"]
ROTA = {"DATABASE": "default", "POLL_INTERVAL": 0.05, "CONNECT_TIMEOUT": 5}
TASKS = {"default": {"BACKEND": "rota.contrib.django.backend.RotaBackend"}}


def database(url: str) -> dict[str, object]:
    from sqlalchemy.engine import make_url

    parts = make_url(url)
    engine = "mysql" if parts.get_backend_name() == "mysql" else "postgresql"
    return {
        "ENGINE": f"django.db.backends.{engine}",
        "NAME": parts.database,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.host or "",
        "PORT": parts.port or "",
        "ATOMIC_REQUESTS": True,
        "TEST": {"NAME": os.environ["TRIAL_TEST_NAME"]},
    }


DATABASES = {
    "default": database(os.environ["TRIAL_DATABASE_URL"])
    if os.environ.get("TRIAL_DATABASE_URL")
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
        "ATOMIC_REQUESTS": True,
    }
}
