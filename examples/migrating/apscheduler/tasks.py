"""A billing service moved from APScheduler 3 to rota: a weekday cron job and an interval job
as cron tasks, a one-off ``date`` job as a job queued for a moment, and the error listener as a
hook. APScheduler retries nothing, so neither do these tasks (``retries=0``).

The functions the handlers call stand in for the real work: each records what it was asked to
do, so that a test sees what ran and for which tick.
"""

from __future__ import annotations

from datetime import datetime

from rota import Event, JobContext, Rota

# job_defaults={"misfire_grace_time": 300}: a run up to 5 minutes late still happens.
rota = Rota(misfire_grace=300)

exports: list[datetime | None] = []
rates: list[datetime | None] = []
reminded: list[int] = []
alerts: list[str] = []


def export_to_accounting() -> None:
    """Stands in for the export; a test makes it fail."""


def alert(message: str) -> None:
    alerts.append(message)


# scheduler.add_job(export_invoices, "cron", day_of_week="mon-fri", hour=6), in the
# scheduler's timezone, Europe/Berlin.
@rota.task(cron="0 6 * * mon-fri", tz="Europe/Berlin", retries=0)
def export_invoices(ctx: JobContext) -> None:
    export_to_accounting()
    exports.append(ctx.scheduled_at)


# scheduler.add_job(refresh_rates, "interval", minutes=15)
@rota.task(cron="*/15 * * * *", retries=0)
def refresh_rates(ctx: JobContext) -> None:
    rates.append(ctx.scheduled_at)


@rota.task(retries=0)
def remind(ctx: JobContext, user_id: int) -> None:
    reminded.append(user_id)


def remind_at(user_id: int, when: datetime) -> int:
    """``scheduler.add_job(remind, "date", run_date=when, args=[user_id],
    id=f"remind-{user_id}")``: one job, run at ``when``; while it waits, asking again for the
    same user returns it instead of adding a second."""
    return rota.queue(remind, user_id, run_at=when, unique_key=f"remind-{user_id}")


# scheduler.add_listener(on_error, EVENT_JOB_ERROR)
def on_error(event: Event) -> None:
    alert(f"{event.task} failed: {event.error}")


rota.on("job.failed", on_error)
