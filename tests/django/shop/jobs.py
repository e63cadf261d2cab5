"""A ``django.tasks`` task outside ``tasks.py``: nothing imports this module when Django
starts, so a worker finds it only from the name of a job (``backend_modules``)."""

from __future__ import annotations

from rota.contrib.django.backend_api import task


@task()
def shout(word: str) -> str:
    return word.upper()


def helper(word: str) -> str:
    """A plain function: a job naming it is never run."""
    raise AssertionError("a plain function was run as a task")


def receipt(ctx: object) -> str:
    """A rota handler of the same name as ``tests.django.test_app.receipt``."""
    return "shop"
