"""The shop's settings: a plain Django project with rota's app, its ``ROTA`` setting and the
dashboard served by the ASGI application (``asgi.py``) under ``/rota/``, for staff only."""

from __future__ import annotations

import os
from pathlib import Path

from shop_project.databases import database

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "django-insecure-example-only-change-me")
DEBUG = os.environ.get("SHOP_DEBUG", "") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = [
    # Before the admin: its admin/index.html adds the link to the dashboard (check rota.W001).
    "rota.contrib.django",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "orders",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "shop_project.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
ASGI_APPLICATION = "shop_project.asgi.application"

DATABASES = {
    "default": database(os.environ.get("SHOP_DATABASE_URL", "sqlite:///db.sqlite3"), BASE_DIR)
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

ROTA = {
    "DATABASE": "default",  # jobs share the orders' database, and so their transactions
    "CONCURRENCY": 4,
    "DASHBOARD": {"PATH": "/rota/", "AUTH": "staff"},
}
