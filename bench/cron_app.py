"""The service the cron-lag benchmark runs in each worker process: one ``* * * * *`` task that
records when its handler started, for the tick it was created for."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from sqlalchemy import Column, Integer, MetaData, String, Table, insert

from rota import JobContext, Rota

PREFIX = os.environ.get("BENCH_PREFIX", "bench_cron_")
starts = Table(
    f"{PREFIX}starts",
    MetaData(),
    Column("tick", String(40), primary_key=True),
    Column("started", String(40), nullable=False),
    Column("pid", Integer, nullable=False),
)
app = Rota(os.environ.get("BENCH_URL", "sqlite:///bench-cron.db"), table_prefix=PREFIX)


@app.task(cron="* * * * *", retries=0)
def minutely(ctx: JobContext) -> None:
    started = datetime.now(timezone.utc).isoformat()
    tick = ctx.scheduled_at.isoformat() if ctx.scheduled_at else "none"
    with app.store.engine.begin() as connection:
        connection.execute(insert(starts).values(tick=tick, started=started, pid=os.getpid()))
