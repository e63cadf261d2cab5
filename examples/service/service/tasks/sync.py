"""Every quarter of an hour: fetch the upstream list of accounts and keep it as a snapshot.

The snapshot is named after the tick, so a second run for the same tick (after a worker died
mid-job, say) sees it is done and fetches nothing.  An unreachable upstream is retried with
back-off; an answer that is not a list of accounts fails the tick at once, since trying again
would not change it.
"""

from __future__ import annotations

import json
from urllib.error import URLError
from urllib.request import urlopen

from rota import Fail, JobContext
from service.files import stamp, tick_of, write_json
from service.rota_app import rota, settings


@rota.task(
    cron="*/15 * * * *",
    retries=3,
    retry_delay=30,
    retry_on=(URLError, TimeoutError, ConnectionError),
    timeout=120,
)
def sync_accounts(ctx: JobContext) -> dict[str, object]:
    path = settings.snapshots / f"accounts-{stamp(tick_of(ctx))}.json"
    if path.exists():
        return {"snapshot": path.name, "skipped": True}
    with urlopen(settings.accounts_url, timeout=30) as response:
        accounts = json.load(response)
    if not isinstance(accounts, list) or not all(isinstance(a, dict) for a in accounts):
        raise Fail(f"{settings.accounts_url} did not answer a JSON list of accounts")
    write_json(path, accounts)
    ctx.logger.info("%d accounts in %s", len(accounts), path.name)
    return {"snapshot": path.name, "accounts": len(accounts)}
