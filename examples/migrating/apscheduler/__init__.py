"""APScheduler 3, moved to rota (docs/migrating/apscheduler.md)."""
