"""A small Django project (settings, the ``shop`` app, ``manage.py``) and rota.contrib.django's
tests against it, on SQLite, MariaDB and PostgreSQL."""
