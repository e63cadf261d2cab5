"""The installed wheel's smoke test: scripts/check-package runs it with the clean venv's python,
where the wheel is installed with its dashboard extra.

It runs from outside the checkout, so it proves that what a user installs works: rota comes from
the venv, its migrations build a SQLite schema, a job runs under ``drain()`` and keeps its result,
a cron schedule ticks on a ``FakeClock``, and the dashboard renders its templates and serves its
static files (the package data a missing include would drop). Exits non-zero on any failure.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import rota
from rota import JobContext, JobState, Rota
from rota.testing import FakeClock

START = datetime(2026, 1, 1, 0, 0, 30, tzinfo=timezone.utc)


def main() -> None:
    installed = Path(rota.__file__).resolve()
    assert installed.is_relative_to(Path(sys.prefix).resolve()), f"rota from {installed}"
    with tempfile.TemporaryDirectory() as directory:
        clock = FakeClock(START)
        app = Rota(f"sqlite:///{directory}/smoke.db", clock=clock)
        ticks: list[datetime | None] = []

        @app.task
        def add(ctx: JobContext, a: int, b: int) -> int:
            return a + b

        @app.task(cron="*/5 * * * *")
        def tick(ctx: JobContext) -> None:
            ticks.append(ctx.scheduled_at)

        job_id = app.queue(add, 2, 3)
        assert app.drain().succeeded == 1
        assert app.job(job_id).state is JobState.SUCCEEDED
        assert app.result(job_id) == 5
        assert ticks == [], "a */5 schedule made at 00:00:30 first ticks at 00:05"

        clock.advance(timedelta(minutes=4, seconds=30))
        assert app.drain().succeeded == 1
        assert ticks == [START.replace(minute=5, second=0)], ticks
        clock.advance(60)
        assert app.drain().succeeded == 0, "no tick between 00:05 and 00:10"
        print("smoke: job queued, drained and its result kept; cron ticked on a FakeClock")

        check_dashboard(app)
        print("smoke: dashboard served its pages and stylesheet over HTTP (uvicorn)")


def check_dashboard(app: Rota) -> None:
    """Served by uvicorn as ``rota dashboard`` serves it, on a port of the system's choosing."""
    import uvicorn

    from rota.dashboard import create_app

    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(app), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        base = f"http://127.0.0.1:{listener.getsockname()[1]}"
        for path in ("/", "/jobs", "/workers", "/static/dashboard.css"):
            assert fetch(base + path), f"{path} is empty"
        schedules = fetch(base + "/schedules")
        assert b'id="schedule-tick"' in schedules, "the schedules page lists the cron schedule"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def fetch(url: str) -> bytes:
    """The body of a GET that answered 200 (``urlopen`` raises for an error status)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200, (url, response.status)
        body: bytes = response.read()
    return body


if __name__ == "__main__":
    main()
