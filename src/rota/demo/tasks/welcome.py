"""A task queued with a delay: the welcome email goes out a little after sign-up."""

from __future__ import annotations

from rota import JobContext

from ..config import app


@app.task(retries=5, retry_delay=10, queue="mail")
def send_welcome_email(ctx: JobContext, to: str, name: str) -> None:
    ctx.logger.info("sending welcome email to %s <%s>", name, to)
