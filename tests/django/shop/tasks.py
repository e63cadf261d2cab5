"""Found by autodiscovery when Django starts: these register on the project's Rota."""

from __future__ import annotations

from django.conf import settings

from rota import JobContext
from rota.contrib.django import rota


@rota.task
def settings_module(ctx: JobContext) -> str:
    """The settings the worker runs with: proof that it runs inside the Django project."""
    return str(settings.SETTINGS_MODULE)
