"""Django's connections as rota meets them: the transaction a job joins, and the request-like
cycle around each sync handler.

A job queued while Django's connection to rota's database holds a transaction open
(``transaction.atomic()``, or autocommit turned off) is written by that connection, in that
transaction (``Store.borrow``): it exists only if the transaction commits, with no second
connection and no ``on_commit`` race. Outside one, rota's own connection commits it at once.

A sync handler runs in one of the worker's threads, which keep their Django connections from
job to job as a server's threads keep them from request to request; a connection the server has
since closed (``wait_timeout``, a restart, ``KILL``) would fail the next job's first query
("MySQL server has gone away"). So each handler runs between two ``close_old_connections()``
calls, as Django runs each request: connections past ``CONN_MAX_AGE`` (0, Django's default:
every one) or broken by an error are closed, and with ``CONN_HEALTH_CHECKS`` a kept one is
checked before its next use. Async handlers, whose ORM calls run in threads of asgiref's, and
``isolation="process"`` handlers, which run in a child process, are left as they are. Under a
``drain()`` inside a test's transaction a sync handler uses the test's connection instead
(``sharing``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from django.db import close_old_connections, connections

from rota.contrib.django import sharing
from rota.tasks import TaskDefinition


def transaction_connection(alias: str) -> Any | None:
    """The DB-API connection of ``alias`` in this thread while it holds a transaction open,
    connected; ``None`` outside a transaction.

    A transaction Django has marked for rollback (an error caught inside ``atomic()``) is
    refused as Django refuses any query in it (``TransactionManagementError``)."""
    wrapper = connections[alias]
    if not wrapper.in_atomic_block and (wrapper.connection is None or wrapper.autocommit):
        return None
    wrapper.validate_no_broken_transaction()
    wrapper.ensure_connection()
    return wrapper.connection


class RequestTask(TaskDefinition):
    """A task whose sync handler runs as a Django request does, between
    ``close_old_connections()`` calls, in the thread that runs it."""

    def call(self, ctx: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if sharing.active():  # a drain inside a test's transaction: its connection, kept open
            with sharing.joined():
                return super().call(ctx, args, kwargs)
        close_old_connections()
        try:
            return super().call(ctx, args, kwargs)
        finally:
            close_old_connections()


def as_request(definition: TaskDefinition) -> TaskDefinition:
    """``definition`` as a ``RequestTask`` when its handler is sync and runs in a thread."""
    if definition.is_async or definition.isolation != "thread":
        return definition
    if isinstance(definition, RequestTask):
        return definition
    given = {item.name: getattr(definition, item.name) for item in fields(definition) if item.init}
    return RequestTask(**given)
