"""The management commands of ``rota.contrib.django``."""
