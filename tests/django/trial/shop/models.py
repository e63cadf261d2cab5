from __future__ import annotations

from django.db import models


class Order(models.Model):
    id: int
    paid: models.BooleanField[bool, bool] = models.BooleanField(default=False)
