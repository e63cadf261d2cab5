"""Entry point of the demo service: logging, first jobs, then the worker until Ctrl-C/SIGTERM.

``app`` is importable from here with every task registered, so ``rota worker rota.demo.main:app``
runs the same service without queueing the start-up jobs.
"""

from __future__ import annotations

import logging
import sys

from rota import RotaError
from rota.core.urls import describe_url

from .config import app, settings
from .tasks import TASKS
from .tasks.flaky import sync_exchange_rates
from .tasks.welcome import send_welcome_email

__all__ = ["TASKS", "app", "main"]

WELCOME_DELAY = 20.0
log = logging.getLogger("demo")


def configure_logging(level: str) -> None:
    """One line per record on stdout, with the logger name so ``rota.events`` stands out."""
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-7s %(name)-32s %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stdout,
    )


def queue_startup_jobs() -> None:
    """What the rest of a service would do: queue a job that will retry and a delayed one.

    ``report_queue`` needs nothing here: its ``cron`` schedule is synced when the worker starts.
    """
    sync_id = app.queue(sync_exchange_rates, "EUR")
    welcome_id = app.queue(send_welcome_email, "ada@example.com", name="Ada", delay=WELCOME_DELAY)
    log.info("queued job %d (sync_exchange_rates) to run now", sync_id)
    log.info("queued job %d (send_welcome_email) to run in %.0f s", welcome_id, WELCOME_DELAY)


def main() -> int:
    configure_logging(settings.log_level)
    log.info("demo service on the %s; press Ctrl-C to stop", describe_url(settings.database_url))
    try:
        queue_startup_jobs()
        app.run()
    except RotaError as error:
        log.error("%s: %s", error.code, error)
        return 1
    log.info("stopped")
    return 0
