"""Every night at 03:30: remove snapshots and reports older than ``$SERVICE_KEEP_DAYS``.

Age is counted back from the tick, not from the clock, and read from the files' names, so a
cleanup run again for the same tick removes the same files (and finds them gone).
"""

from __future__ import annotations

from datetime import timedelta

from rota import JobContext
from service.files import dated, tick_of
from service.rota_app import rota, settings


@rota.task(cron="30 3 * * *", retries=1)
def purge_old_files(ctx: JobContext) -> dict[str, int]:
    cutoff = tick_of(ctx) - timedelta(days=settings.keep_days)
    removed = 0
    for directory, kind in ((settings.snapshots, "accounts"), (settings.reports, "report")):
        for moment, path in dated(directory, kind):
            if moment < cutoff:
                path.unlink(missing_ok=True)
                removed += 1
    return {"removed": removed}
