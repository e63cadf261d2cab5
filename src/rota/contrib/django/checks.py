"""Django system checks of rota's app: what would leave the project silently without a feature.

``rota.W001``: the admin's index links to the dashboard through the app's ``admin/index.html``,
which extends the admin's own; Django's template loaders take the first app that has the name,
so the link is there only when ``rota.contrib.django`` comes before ``django.contrib.admin`` in
``INSTALLED_APPS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.core import checks

from rota.contrib.django.project import project_options


def admin_link(
    *, app_configs: Sequence[AppConfig] | None, databases: Sequence[str] | None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if project_options().dashboard is None or not apps.is_installed("django.contrib.admin"):
        return []
    names = [config.name for config in apps.get_app_configs()]
    if names.index("rota.contrib.django") < names.index("django.contrib.admin"):
        return []
    return [
        checks.Warning(
            "the admin will not link to rota's dashboard: rota.contrib.django comes after "
            "django.contrib.admin in INSTALLED_APPS",
            hint="put 'rota.contrib.django' before 'django.contrib.admin'",
            id="rota.W001",
        )
    ]
