"""The trial's view and docs/django.md's ``place_order``, whose module the test writes into the
copy it runs (so it is found by name, not imported here)."""

from django.urls import path
from django.utils.module_loading import import_string

from .adding_views import add_now

urlpatterns = [path("add/", add_now), path("orders/", import_string("shop.views.place_order"))]
