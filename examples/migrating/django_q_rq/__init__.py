"""django-q2 and django-rq, moved to rota (docs/migrating/django-q-rq.md)."""
