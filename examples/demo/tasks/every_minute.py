"""A task that runs at the start of every minute.

Each run first makes sure the next one is queued for the next minute boundary, so a failure in
the work itself never breaks the chain; ``main`` starts the chain when no run is pending.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rota import JobContext

from ..config import app


@app.task(retries=0)
def report_queue(ctx: JobContext) -> None:
    """Log how much work is waiting: the kind of housekeeping a service does every minute."""
    queue_next_run()
    active = app.jobs()
    pending = sum(1 for job in active if job.status == "pending")
    ctx.logger.info("%d job(s) pending, %d running", pending, len(active) - pending)


def queue_next_run() -> int | None:
    """Queue the run at the next minute boundary unless one is already pending.

    Checking first keeps one chain even when the service restarts or a run is retried.
    """
    if any(job.name == "report_queue" and job.status == "pending" for job in app.jobs()):
        return None
    return app.queue(report_queue, run_at=next_minute(app.clock.now()))


def next_minute(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1)
