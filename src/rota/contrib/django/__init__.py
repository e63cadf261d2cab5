"""rota in a Django project.

::

    INSTALLED_APPS = [..., "rota.contrib.django"]
    ROTA = {"DATABASE": "default", "TABLE_PREFIX": "rota_", "CONCURRENCY": 10}

    # any app's tasks.py, imported when Django starts
    from rota.contrib.django import rota

    @rota.task(retries=5)
    def send_welcome(ctx, user_id: int) -> None: ...

    # a view: the job exists only if the transaction commits
    with transaction.atomic():
        user = User.objects.create(...)
        rota.queue(send_welcome, user.id)

``manage.py rota worker`` runs the worker (``manage.py rota <command>``: every ``rota``
command). The database is ``DATABASES[ROTA["DATABASE"]]`` (``options``, ``databases``). With
``ROTA["DASHBOARD"]``, ``dashboard.with_dashboard`` serves the dashboard from the project's ASGI
application, for staff users (``staff``), and the admin's index links to it.
"""

from __future__ import annotations

from rota.contrib.django.project import DjangoRota, get_rota

__all__ = ["DjangoRota", "get_rota", "rota"]


def __getattr__(name: str) -> DjangoRota:
    """``rota``: the project's Rota (``get_rota()``), made when it is first imported."""
    if name == "rota":
        return get_rota()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
