"""Alerts: a schedule whose last ``$ROTA_ALERT_AFTER_FAILURES`` ticks failed is *failing*, and
its ``schedule.failing`` event queues ``post_alert``, which posts to ``$SERVICE_ALERT_WEBHOOK``.

The hook only queues: it runs in a worker's small hook pool with a time limit, while the job is
durable and retried when the webhook cannot be reached.  The event is announced once, by the
replica that counted the failing tick; the job's unique key (schedule and tick) keeps it one
alert even so.  Without a webhook the alert is only logged (rota logs the event at ERROR too).
"""

from __future__ import annotations

import json
from urllib.error import URLError
from urllib.request import Request, urlopen

from rota import Event, JobContext
from service.rota_app import rota, settings


@rota.task(
    queue="alerts", retries=5, retry_delay=30, retry_on=(URLError, TimeoutError, ConnectionError)
)
def post_alert(ctx: JobContext, text: str) -> None:
    if settings.alert_webhook is None:
        ctx.logger.warning("no $SERVICE_ALERT_WEBHOOK: %s", text)
        return
    body = json.dumps({"text": text}).encode()
    headers = {"content-type": "application/json"}
    with urlopen(Request(settings.alert_webhook, body, headers, method="POST"), timeout=10):
        pass


def alert_failing(event: Event) -> None:
    schedule, tick = event.fields.get("schedule"), event.fields.get("scheduled_at")
    text = f"schedule {schedule} is failing: {event.error}"
    rota.queue(post_alert, text, unique_key=f"failing:{schedule}:{tick}")


rota.on("schedule.failing", alert_failing)
