"""Placing an order: the order, its stock and its confirmation job in one transaction.

The job is queued inside ``transaction.atomic()``, so rota writes it through Django's
connection, in that transaction: when the stock turns out short after it was queued, the
rollback takes the order and the job with it, and no worker ever confirms an order that does
not exist. No ``on_commit``, no second connection.
"""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods

from orders.models import Order, Product
from orders.tasks import confirm_order
from rota.contrib.django import rota


class OutOfStock(Exception):
    pass


def reserve(product_id: int, quantity: int) -> None:
    """Take ``quantity`` from the product's stock, or raise ``OutOfStock``."""
    product = Product.objects.select_for_update().get(id=product_id)
    if product.stock < quantity:
        raise OutOfStock(f"only {product.stock} of {product.name} left")
    product.stock -= quantity
    product.save(update_fields=["stock"])


@require_http_methods(["GET", "POST"])
def place_order(request: HttpRequest) -> HttpResponse:
    """GET: the order form. POST ``product`` and ``quantity``: 201 with the order and its job,
    or 409 when the stock is short (and then neither exists)."""
    if request.method == "GET":
        return render(request, "orders/place.html", {"products": Product.objects.all()})
    product = get_object_or_404(Product, id=int(request.POST["product"]))
    quantity = int(request.POST["quantity"])
    try:
        with transaction.atomic():
            order = Order.objects.create(product=product, quantity=quantity)
            job = rota.queue(confirm_order, order.id)
            reserve(product.id, quantity)
    except OutOfStock as error:
        return JsonResponse({"error": str(error)}, status=409)
    return JsonResponse({"order": order.id, "job": job}, status=201)


@require_GET
def order(request: HttpRequest, order_id: int) -> JsonResponse:
    found = get_object_or_404(Order, id=order_id)
    return JsonResponse({"order": found.id, "status": found.status})
