"""Checks of the trial beside docs/django.md's examples, run by ``manage.py test shop.checks``
and by pytest-django alike."""

from __future__ import annotations

import time

from django.db import connection, transaction
from django.test import TestCase, TransactionTestCase

from rota.contrib.django import rota

from .adding import add


class OnTheTestDatabase(TestCase):
    def test_rota_is_built_on_the_test_database(self) -> None:
        name = str(connection.settings_dict["NAME"])
        # SQLite's in-memory one: file:memorydb_default?mode=memory&cache=shared
        assert name.partition("?")[0].removeprefix("file:") in rota.config.url
        assert "memory" not in name or "uri=true" in rota.config.url


class ReadInTheTransaction(TransactionTestCase):
    def test_a_view_under_atomic_requests_reads_the_task_it_enqueued(self) -> None:
        started = time.monotonic()
        response = self.client.get("/add/")
        assert response.json()["status"] == "READY"
        assert time.monotonic() - started < 10  # SQLite waited 60 s for its own lock

    def test_get_result_in_the_enqueuing_transaction(self) -> None:
        with transaction.atomic():
            result = add.enqueue(2, 3)
            assert add.get_result(result.id).status == "READY"
            assert rota.drain().succeeded >= 1  # with the view test's job, committed
            assert add.get_result(result.id).return_value == 5
        assert add.get_result(result.id).status == "SUCCESSFUL"
