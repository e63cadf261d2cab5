"""Integrations of rota with frameworks (``rota.contrib.django``)."""
