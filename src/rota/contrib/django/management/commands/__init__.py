"""``manage.py rota``."""
