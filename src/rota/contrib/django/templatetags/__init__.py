"""The template tags of rota's Django app (``{% load rota_dashboard %}``)."""
