"""The service ``bench.cron_scale`` runs in each worker process: ``BENCH_SCHEDULES`` no-op cron
tasks, half every minute and half every five minutes."""

from __future__ import annotations

import os

from rota import Rota
from rota.tasks import TaskDefinition

SCHEDULES = int(os.environ.get("BENCH_SCHEDULES", "10000"))
app = Rota(
    os.environ.get("BENCH_URL", "sqlite:///bench-cron-scale.db"),
    table_prefix=os.environ.get("BENCH_PREFIX", "bench_cron_scale_"),
)


def nothing() -> None:
    """Each tick's job does no work: the benchmark measures the ticks' enqueueing."""


def cron_of(index: int) -> str:
    return "* * * * *" if index % 2 == 0 else "*/5 * * * *"


for number in range(SCHEDULES):
    app.define_task(
        TaskDefinition(name=f"tick-{number:05d}", cron=cron_of(number), handler=nothing, retries=0)
    )
