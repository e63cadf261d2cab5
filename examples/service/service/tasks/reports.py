"""On ``$SERVICE_REPORT_CRON`` (every day at 06:00 by default): count the accounts of the
newest snapshot by plan, into ``reports/report-<tick>.json``.

One report per tick: a report already written for this tick is left as it is.  A report with no
snapshot to read fails, so that a sync that never ran is noticed (``schedule.failing``).
"""

from __future__ import annotations

import json
from collections import Counter

from rota import Fail, JobContext
from service.files import dated, stamp, tick_of, write_json
from service.rota_app import rota, settings


@rota.task(cron=settings.report_cron, tz=settings.report_tz, retries=2, retry_delay=60)
def daily_report(ctx: JobContext) -> dict[str, object]:
    tick = tick_of(ctx)
    path = settings.reports / f"report-{stamp(tick)}.json"
    if path.exists():
        return {"report": path.name, "skipped": True}
    snapshots = [
        snapshot for moment, snapshot in dated(settings.snapshots, "accounts") if moment <= tick
    ]
    if not snapshots:
        raise Fail("no accounts snapshot yet: run `rota run-now sync_accounts`")
    accounts = json.loads(snapshots[-1].read_text())
    by_plan = Counter(str(account.get("plan", "none")) for account in accounts)
    report = {"tick": tick.isoformat(), "snapshot": snapshots[-1].name, "by_plan": by_plan}
    write_json(path, report)
    return {"report": path.name, "accounts": len(accounts)}
