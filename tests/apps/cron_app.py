"""A service with one every-minute schedule, run by ``rota worker`` in the cron process test.

Each run records its tick, its process and when it started in ``<prefix>runs``.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from sqlalchemy import insert

from rota import JobContext, Rota
from tests.apps.records import runs_table
from tests.helpers import sql_store

PREFIX = os.environ["ROTA_TEST_PREFIX"]
app = Rota(os.environ["ROTA_TEST_URL"], table_prefix=PREFIX, poll_interval=0.5, concurrency=2)
runs = runs_table(PREFIX)


@app.task(cron="* * * * *", retries=0)
def minutely(ctx: JobContext) -> None:
    started = datetime.now(timezone.utc).isoformat()
    tick = ctx.scheduled_at.isoformat() if ctx.scheduled_at else "none"
    with sql_store(app).engine.begin() as connection:
        connection.execute(insert(runs).values(tick=tick, pid=os.getpid(), started=started))
