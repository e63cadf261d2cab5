"""A task that runs at the start of every minute, from a cron schedule defined in code.

Every replica of the service may run this module: the schedule is stored once under the task's
name, and each minute becomes exactly one job, whichever process enqueues it.
"""

from __future__ import annotations

from rota import JobContext

from ..config import app


@app.task(cron="* * * * *", retries=0)
def report_queue(ctx: JobContext) -> None:
    """Log how much work is waiting: the kind of housekeeping a service does every minute."""
    active = [status for status in app.jobs() if status.cron is None]
    pending = sum(1 for status in active if status.status == "pending")
    ctx.logger.info(
        "tick %s: %d job(s) pending, %d running",
        ctx.scheduled_at.strftime("%H:%M") if ctx.scheduled_at else "?",
        pending,
        len(active) - pending,
    )
