"""Celery beat and django-celery-beat, moved to rota (docs/migrating/celery-beat.md)."""
