"""The ``rota`` command: thin wrappers over the ``Rota`` façade.

Exit codes: 0 success, 1 an operational failure (database unreachable, job or schedule not
found, action not applicable), 2 a usage error.
"""

from __future__ import annotations

import click

from rota.cli.admin import demo, migrate, prune, worker
from rota.cli.apply import apply
from rota.cli.bulk import delete, replay, update
from rota.cli.check import check
from rota.cli.control import cancel, pause, resume, retry, run_now
from rota.cli.dashboard import dashboard
from rota.cli.listing import jobs
from rota.cli.loading import load_app
from rota.cli.schedule import schedule
from rota.cli.show import job, schedules
from rota.observe.logs import configure_logging

__all__ = ["configure_logging", "load_app", "main"]


class Commands(click.Group):
    """Lists its commands in the order they were added, set-up first, then inspection."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(cls=Commands)
@click.version_option(package_name="rota")
def main() -> None:
    """Durable background jobs and cron on MySQL/MariaDB, PostgreSQL or SQLite."""


for command in (
    migrate,
    worker,
    prune,
    demo,
    check,
    jobs,
    job,
    schedules,
    schedule,
    retry,
    cancel,
    pause,
    resume,
    delete,
    update,
    replay,
    run_now,
    dashboard,
):
    main.add_command(command)
schedules.add_command(apply)
