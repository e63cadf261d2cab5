"""The service's tasks, one module per concern; importing this package registers them all on
``service.rota_app.rota`` (each module decorates its handlers there)."""

from service.tasks import alerts, cleanup, reports, sync

__all__ = ["alerts", "cleanup", "reports", "sync"]
