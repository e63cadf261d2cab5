"""A task whose upstream is unreliable: its first attempts fail, a later one succeeds.

It shows retries with exponential back-off in the execution log (``job.retrying`` with the
delay, then ``job.succeeded``) without waiting long: ``retry_delay`` is 2 s.
"""

from __future__ import annotations

from rota import JobContext

from ..config import app

FAILING_ATTEMPTS = 2


class UpstreamUnavailable(Exception):
    """What a real client library would raise on a timeout or a 503."""


@app.task(retries=3, retry_delay=2)
def sync_exchange_rates(ctx: JobContext, currency: str) -> None:
    if ctx.attempt <= FAILING_ATTEMPTS:
        raise UpstreamUnavailable(f"rates service did not answer (attempt {ctx.attempt})")
    ctx.logger.info("%s exchange rates updated on attempt %d", currency, ctx.attempt)
