"""The replica processes of the scheduling comparison: an APScheduler 3 scheduler or a ``rota
worker`` sharing one database.

Every execution is one row of the ``runs`` table, which has no unique key on the job, so a job
that ran twice shows up twice.  Both systems record through the same code, so the cost of
recording is the same for both.

    python -m bench.peers.sched_app          # one APScheduler replica (BENCH_URL, BENCH_PREFIX)
    rota worker bench.peers.sched_app:app    # one rota replica (same variables)
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from datetime import timezone
from functools import cache
from typing import Any

from apscheduler.events import EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Column, Double, Integer, MetaData, String, Table, create_engine, insert
from sqlalchemy.engine import Engine

from rota import JobContext, Rota

RECORD_TASK = "bench_record"
TICK_JOB = "tick"
RECORD_REF = f"{__name__}:aps_record"
TICK_REF = f"{__name__}:aps_tick"
READY = "replica ready"


def driver_url(url: str) -> str:
    """rota reads ``mysql://`` as PyMySQL; plain SQLAlchemy would look for MySQLdb instead."""
    return "mysql+pymysql://" + url.removeprefix("mysql://") if url.startswith("mysql://") else url


def runs_table(prefix: str) -> Table:
    return Table(
        f"{prefix}runs",
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("system", String(20), nullable=False),
        Column("job_key", String(64), nullable=False),
        Column("scheduled", Double, nullable=False),
        Column("started", Double, nullable=False),
        Column("pid", Integer, nullable=False),
    )


@cache
def _recorder() -> tuple[Engine, Table]:
    engine = create_engine(driver_url(os.environ["BENCH_URL"]), pool_pre_ping=True)
    return engine, runs_table(os.environ["BENCH_PREFIX"])


def save(system: str, key: str, scheduled: float, started: float) -> None:
    engine, table = _recorder()
    row = {"system": system, "job_key": key, "scheduled": scheduled, "started": started}
    with engine.begin() as connection:
        connection.execute(insert(table).values(pid=os.getpid(), **row))


def aps_record(key: str, scheduled: float) -> None:
    """The one-off APScheduler job; the store keeps it as the textual reference ``RECORD_REF``."""
    save("apscheduler3", key, scheduled, time.time())


def aps_tick() -> float:
    """The recurring APScheduler job: APScheduler 3 does not tell a job which run time it serves,
    so the job returns its start and the execution listener stores it with that run time."""
    return time.time()


def aps_jobstore(url: str, prefix: str) -> SQLAlchemyJobStore:
    return SQLAlchemyJobStore(url=driver_url(url), tablename=f"{prefix}aps_jobs")


def aps_scheduler(url: str, prefix: str) -> BackgroundScheduler:
    """Library defaults throughout (10 threads, misfire grace 1 s, coalesce) but the store."""
    return BackgroundScheduler(
        jobstores={"default": aps_jobstore(url, prefix)}, timezone=timezone.utc
    )


def make_rota(url: str, prefix: str) -> Rota:
    """Library defaults throughout (poll interval 1 s, concurrency 5) but the table prefix."""
    app = Rota(url, table_prefix=f"{prefix}r_")

    @app.task(name=RECORD_TASK, retries=0)
    def record(ctx: JobContext, key: str, scheduled: float) -> None:
        save("rota", key, scheduled, time.time())

    return app


@cache
def _environment_app() -> Rota:
    return make_rota(os.environ["BENCH_URL"], os.environ["BENCH_PREFIX"])


def __getattr__(name: str) -> Any:
    """``app`` is built on first access, so importing this module connects to nothing."""
    if name == "app":
        return _environment_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def on_executed(event: JobExecutionEvent) -> None:
    if event.job_id == TICK_JOB and isinstance(event.retval, float):
        run_time = event.scheduled_run_time
        save("apscheduler3", run_time.isoformat(), run_time.timestamp(), event.retval)


def run_apscheduler() -> None:
    """One replica as a web app would embed it: a ``BackgroundScheduler`` until SIGTERM."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    scheduler = aps_scheduler(os.environ["BENCH_URL"], os.environ["BENCH_PREFIX"])
    scheduler.add_listener(on_executed, EVENT_JOB_EXECUTED)
    scheduler.start()
    logging.getLogger(__name__).info(READY)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        scheduler.shutdown(wait=True)


if __name__ == "__main__":
    run_apscheduler()
