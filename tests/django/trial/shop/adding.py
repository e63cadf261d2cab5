"""The trial's ``django.tasks`` task (``backend_api.task`` is ``django.tasks.task``, or the
backport's), beside the app's own ``tasks.py``, which is docs/django.md's."""

from rota.contrib.django.backend_api import task


@task()
def add(a: int, b: int) -> int:
    return a + b
