"""The Django app: ``settings.ROTA`` checked and every app's ``tasks.py`` imported at start-up;
its templates link the admin to the dashboard (``rota.contrib.django.dashboard``); test
databases prepare and release the project's Rota (``testdb``)."""

from __future__ import annotations

from django.apps import AppConfig
from django.core import checks
from django.utils.module_loading import autodiscover_modules

from rota.contrib.django import project, testdb
from rota.contrib.django.checks import admin_link


class RotaAppConfig(AppConfig):
    name = "rota.contrib.django"
    label = "rota"
    verbose_name = "rota"

    def ready(self) -> None:
        """A wrong ``ROTA`` setting fails the start (``ConfigError``), not the first job; then
        each installed app's ``tasks`` module registers its tasks on the project's Rota."""
        project.check()
        testdb.install()
        checks.register(admin_link, checks.Tags.templates)
        autodiscover_modules("tasks")
