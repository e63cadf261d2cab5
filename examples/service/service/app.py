"""The entry point: ``python -m service`` (as the systemd units run it) or ``rota worker
service.app:rota``, the same worker either way.

Importing ``service.tasks`` registers every task on the one ``Rota``; this module is imported by
nothing of the service's own.
"""

from __future__ import annotations

import service.tasks  # noqa: F401  (registers the tasks)
from service.rota_app import rota, settings

__all__ = ["main", "rota"]


def main() -> int:
    """Run the worker until SIGTERM (systemctl stop) or SIGINT: running jobs get 30 s to end,
    then return to pending for the other replica."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    rota.run()
    return 0
