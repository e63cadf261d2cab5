"""``rota jobs``, ``rota schedules`` and ``rota check`` in a real 80-column terminal (a pty):
no line is wider than the terminal, every timestamp is whole on one line, and a long name is
whole or cut short with an ellipsis, never split across lines."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rich.cells import cell_len

from rota import JobContext, Rota
from rota.core.model import WorkerInfo
from rota.display import when
from rota.testing import FakeClock
from tests.conftest import START
from tests.helpers import sql_store

pytestmark = pytest.mark.slow

TASK = "reconcile-customer-invoices-against-the-general-ledger-every-night"
QUEUE = "billing-and-invoicing-at-high-priority"
GHOST = "a-task-that-no-worker-of-this-cluster-registers-anywhere"
SCHEDULE = "a-very-long-schedule-name-for-the-five-minute-status-report"
CRON_TASK = "every_quarter_hour_of_business_hours_in_buenos_aires"
CRON = "0,15,30,45 8-18 * * 1-5"
ZONE = "America/Argentina/Buenos_Aires"
HOST = "worker-host-number-one.eu-west-1.compute.internal.example.com"
NAMES = (TASK, QUEUE, GHOST, SCHEDULE, CRON_TASK, HOST)
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2}Z|[+-]\d{2}:\d{2})")
TIME = re.compile(r"\d{2}:\d{2}")


def in_terminal(*arguments: str, columns: int = 80) -> tuple[int, list[str]]:
    """Run ``python -m rota ...`` on a pseudo-terminal ``columns`` wide; its exit code and
    the lines it showed, colours removed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environment = {key: value for key, value in os.environ.items() if key != "ROTA_DATABASE_URL"}
    environment.update(COLUMNS=str(columns), LINES="24", TERM="xterm-256color")
    process = subprocess.Popen(
        [sys.executable, "-m", "rota", *arguments],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=environment,
        close_fds=True,
    )
    os.close(follower)
    shown = bytearray()
    try:
        while chunk := os.read(leader, 65536):
            shown += chunk
    except OSError:  # EIO: the terminal's last writer is gone
        pass
    finally:
        os.close(leader)
    code = process.wait(timeout=60)
    text = ESCAPES.sub("", shown.decode()).replace("\r\n", "\n")
    return code, text.splitlines()


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A database with long task, queue, schedule and host names, errors, and a live worker."""
    url = f"sqlite:///{tmp_path}/jobs.db"
    rota = Rota(url, clock=FakeClock(START))

    @rota.task(name=TASK, retries=0, queue=QUEUE)
    def reconcile(ctx: JobContext) -> None:
        raise RuntimeError("the ledger is locked")

    @rota.task(name=CRON_TASK, cron=CRON, tz=ZONE)
    def quarterly(ctx: JobContext) -> None: ...

    @rota.task
    def short(ctx: JobContext) -> None: ...

    rota.queue(TASK)
    rota.queue(short)
    rota.queue(short, delay=3600)
    rota.drain()
    rota.schedule("*/5 * * * *", short, tz="Asia/Shanghai", name=SCHEDULE)
    rota.queue(GHOST, queue="mail")
    now = datetime.now(timezone.utc)
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="w1",
            host=HOST,
            pid=4321,
            queues=("default", QUEUE, "mail"),
            tasks=("short",),
            concurrency=5,
            started_at=now - timedelta(hours=2),
            heartbeat_at=now,
            task_queues={"short": "default"},
        )
    )
    sql_store(rota).engine.dispose()
    return url


def longest_piece(name: str, line: str) -> str | None:
    """The longest piece of ``name`` (10 characters or more) that ``line`` shows."""
    for size in range(len(name), 9, -1):
        for start in range(len(name) - size + 1):
            if name[start : start + size] in line:
                return name[start : start + size]
    return None


def assert_readable(lines: list[str], columns: int) -> None:
    assert lines, "nothing shown"
    screen = "\n".join(lines)
    for line in lines:
        assert cell_len(line) <= columns, f"{cell_len(line)} columns: {line!r}\n{screen}"
        for date in DATE.finditer(line):
            assert TIMESTAMP.match(line, date.start()), f"a timestamp cut: {line!r}\n{screen}"
        for time in TIME.finditer(line):
            assert DATE.search(line, 0, time.start()), f"a time alone: {line!r}\n{screen}"
        for name in NAMES:
            piece = longest_piece(name, line)
            if piece is not None and piece != name:
                assert name.startswith(piece) and f"{piece}…" in line, (
                    f"{name!r} split, or cut without an ellipsis: {line!r}\n{screen}"
                )


def test_jobs_fit_80_columns(url: str) -> None:
    code, lines = in_terminal("jobs", "--url", url)
    assert code == 0, lines
    assert_readable(lines, 80)
    header = lines[0].split()
    assert header[:3] == ["id", "task", "queue"] and "state" in header, lines
    for row in lines[2:6]:
        assert when(START) in row or when(START + timedelta(hours=1)) in row, row
    assert any(f"{TASK[:6]}" in line and "…" in line for line in lines), lines
    assert lines[-1].startswith("(") and "--json shows all" in lines[-1], lines
    assert "finished at" in lines[-1]


def test_schedules_fit_80_columns(url: str) -> None:
    code, lines = in_terminal("schedules", "--url", url)
    assert code == 0, lines
    assert_readable(lines, 80)
    assert "next runs" in lines[0] and "cron" in lines[0]
    shown = [match.group() for line in lines for match in TIMESTAMP.finditer(line)]
    for offset in ("+08:00", "-03:00"):  # Asia/Shanghai, Buenos Aires: three next runs each
        assert len([tick for tick in shown if tick.endswith(offset)]) == 3, lines
    assert any("0,15,30,45" in line for line in lines), lines
    assert lines[-1].startswith("(") and "--json shows all" in lines[-1], lines


def test_check_fits_80_columns(url: str) -> None:
    code, shown = in_terminal("check", "--url", url)
    assert code == 1, "stranded jobs"
    (problem,) = [line for line in shown if line.startswith("Error: ")]
    assert problem.startswith("Error: JOBS_STRANDED: "), "a message, which the terminal wraps"
    lines = [line for line in shown if line != problem]
    assert_readable(lines, 80)
    text = "\n".join(lines)
    assert "Live workers:" in text and "Pending jobs no live worker can run:" in text
    assert "4321" in text and "no live worker registers" in text


def test_a_wide_terminal_shows_every_column_and_whole_names(url: str) -> None:
    code, lines = in_terminal("jobs", "--url", url, columns=250)
    assert code == 0, lines
    assert_readable(lines, 250)
    assert re.split(r"\s{2,}", lines[0].strip()) == [
        "id",
        "task",
        "queue",
        "state",
        "attempt",
        "progress",
        "run at",
        "finished at",
        "last error",
    ]
    assert any(TASK in line and QUEUE in line for line in lines), lines
    assert not any("…" in line or "not shown" in line for line in lines), lines
