from django.urls import path

from .views import add_now

urlpatterns = [path("add/", add_now)]
