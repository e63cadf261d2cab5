"""What the tests write through Django's ORM, beside the jobs."""

from __future__ import annotations

from django.db import models


class Order(models.Model):
    id: int
    reference: models.CharField[str, str] = models.CharField(max_length=50)

    class Meta:
        app_label = "shop"
