"""The shop's URLs: the admin, and the orders' two views. The dashboard is not here: the ASGI
application serves it (``asgi.py``)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from orders import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("orders/", views.place_order, name="place-order"),
    path("orders/<int:order_id>/", views.order, name="order"),
]
