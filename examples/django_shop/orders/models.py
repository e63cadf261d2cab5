"""Products with a stock, and the orders that take from it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Product(models.Model):
    id: int
    name: models.CharField[str, str] = models.CharField(max_length=100)
    stock: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return self.name


class Order(models.Model):
    PLACED, CONFIRMED, CANCELLED = "placed", "confirmed", "cancelled"
    STATUSES = [(PLACED, "placed"), (CONFIRMED, "confirmed"), (CANCELLED, "cancelled")]

    id: int
    product_id: int
    product: models.ForeignKey[Product, Product] = models.ForeignKey(
        Product, on_delete=models.PROTECT
    )
    quantity: models.PositiveIntegerField[int, int] = models.PositiveIntegerField()
    status: models.CharField[str, str] = models.CharField(
        max_length=20, choices=STATUSES, default=PLACED
    )
    placed_at: models.DateTimeField[object, object] = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"order {self.id}: {self.quantity} x {self.product_id} ({self.status})"
