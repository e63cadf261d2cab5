"""The orders in Django's admin, whose index also links to rota's dashboard."""

from __future__ import annotations

from django.contrib import admin

from orders.models import Order, Product

admin.site.register(Product)
admin.site.register(Order)
