"""The Rotas of a project around a test runner's test databases (``manage.py test``,
pytest-django), with no call of the project's own.

Django has no signal for them, but every runner makes and drops them through
``BaseDatabaseCreation.create_test_db`` and ``destroy_test_db``, which ``install`` wraps:

- once a test database of rota's alias is made (and migrated), the project's Rota is prepared
  on it (``DjangoRota.prepare``, which makes rota's tables with ``auto_migrate``): outside any
  test's transaction, so a ``TestCase`` finds them, and on MySQL/MariaDB no ``CREATE TABLE``
  commits a test's transaction halfway;
- before a test database is dropped, the pools of the Rotas built on it are closed: PostgreSQL
  refuses to drop a database others are connected to ("is being accessed by other users"), and
  SQLite keeps an in-memory database alive while a connection to it is open.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db.backends.base.creation import BaseDatabaseCreation

from rota.contrib.django.project import BUILT, built, get_rota, project_options


def install() -> None:
    """Wrap ``BaseDatabaseCreation``'s two methods, once per process."""
    if getattr(BaseDatabaseCreation.create_test_db, "rota_wrapped", False):
        return
    create, destroy = BaseDatabaseCreation.create_test_db, BaseDatabaseCreation.destroy_test_db

    @functools.wraps(create)
    def create_test_db(self: BaseDatabaseCreation, *args: Any, **kwargs: Any) -> str:
        name = create(self, *args, **kwargs)
        created(self.connection.alias)
        return name

    @functools.wraps(destroy)
    def destroy_test_db(self: BaseDatabaseCreation, *args: Any, **kwargs: Any) -> None:
        dropping(self.connection.alias)
        destroy(self, *args, **kwargs)

    create_test_db.rota_wrapped = True  # type: ignore[attr-defined]
    BaseDatabaseCreation.create_test_db = create_test_db  # type: ignore[method-assign]
    BaseDatabaseCreation.destroy_test_db = destroy_test_db  # type: ignore[method-assign]


def created(alias: str) -> None:
    """Prepare the project's Rota on the test database of ``alias`` if it is rota's, has not
    been built yet (on another database) and makes its own tables."""
    chosen = project_options()
    if chosen.database != alias or not chosen.keywords.get("auto_migrate", True):
        return
    rota = get_rota()
    if rota.__dict__.get("_state") != BUILT:
        rota.prepare()


def dropping(alias: str) -> None:
    """Close the pools of the Rotas built on ``alias``'s database, which is about to go."""
    for rota in list(built):
        if rota.__dict__.get("_alias") == alias:
            rota.store.dispose()
