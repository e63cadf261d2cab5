"""``rota jobs``, ``rota schedules`` and ``rota check`` in a real terminal (a pty) 80 or 120
columns wide: no line is wider than the terminal, every timestamp, error code, cron rule and
zone is whole on one line, a long name is whole or cut short with an ellipsis, never split
across lines, and what an operator reads first is there."""

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
from rota.core.model import Progress, ProgressReport, WorkerInfo
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
    clock = FakeClock(START)
    rota = Rota(url, clock=clock)

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
    clock.advance(timedelta(minutes=5))
    assert rota.drain().succeeded == 1  # the schedule's first tick
    running = rota.queue(short)
    rota.queue(GHOST, queue="mail")
    now = datetime.now(timezone.utc)
    (claimed,) = rota.store.jobs.claim("w1", ["default"], ["short"], 1, clock.now(), now)
    assert claimed.id == running
    report = ProgressReport(running, 1, Progress(0.4, "4 of 10 files"))
    rota.store.jobs.heartbeat("w1", [running], clock.now(), now, [report])
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


def line_with(text: str, lines: list[str]) -> int:
    """The index of the only line showing ``text`` whole."""
    (index,) = [i for i, line in enumerate(lines) if text in line]
    return index


@pytest.mark.parametrize("columns", [80, 120])
def test_jobs_show_what_an_operator_reads_first(url: str, columns: int) -> None:
    code, lines = in_terminal("jobs", "--url", url, columns=columns)
    assert code == 0, lines
    assert_readable(lines, columns)
    screen = "\n".join(lines)
    headers = [line.split("  ") for line in lines[:2]]
    for header in ("id", "task", "state", "attempt", "run at", "started at", "progress"):
        assert any(header in [h.strip() for h in line] for line in headers), screen
    assert "last error" in lines[0] and "message" in lines[1], screen
    failed = line_with("EXECUTION_FAILED", lines)
    assert "failed" in lines[failed] and "1/1" in lines[failed + 1], screen
    message = " ".join(line[lines[failed].index("EXECUTION_FAILED") :] for line in lines[failed:])
    assert message.split()[:5] == ["EXECUTION_FAILED", "the", "ledger", "is", "locked"], screen
    assert "40%" in screen and "running" in screen, screen
    hidden = "(queue, finished at not shown" if columns == 80 else "not shown"
    assert (hidden in screen) is (columns == 80), screen


@pytest.mark.parametrize("columns", [80, 120])
def test_schedules_show_what_an_operator_reads_first(url: str, columns: int) -> None:
    code, lines = in_terminal("schedules", "--url", url, columns=columns)
    assert code == 0, lines
    assert_readable(lines, columns)
    screen = "\n".join(lines)
    headers = " ".join(lines[:3])
    for header in ("name", "task", "cron", "tz", "next run", "last run", "runs", "failed"):
        assert header in headers, screen
    for whole in (CRON, ZONE, "*/5 * * * *", "Asia/Shanghai"):
        line_with(whole, lines)
    shown = [match.group() for line in lines for match in TIMESTAMP.finditer(line)]
    for offset in ("+08:00", "-03:00"):  # Asia/Shanghai, Buenos Aires: the next run of each
        assert len([tick for tick in shown if tick.endswith(offset)]) == 1, screen
    assert when(START + timedelta(minutes=5)) in shown, "the last run"
    assert screen.count("active") == 2 and "not shown" not in screen, screen
    assert len([line for line in lines if CRON_TASK[:12] in line]) == 1, "its task is its name"
    assert line_with("short", lines) >= line_with(SCHEDULE[:12], lines), "the other task shown"


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
    code, lines = in_terminal("jobs", "--url", url, columns=270)
    assert code == 0, lines
    assert_readable(lines, 270)
    assert re.split(r"\s{2,}", lines[0].strip()) == [
        "id",
        "task",
        "progress",
        "queue",
        "state",
        "attempt",
        "run at",
        "started at",
        "finished at",
        "last error",
        "message",
    ]
    assert any(TASK in line and QUEUE in line for line in lines), lines
    assert not any("…" in line or "not shown" in line for line in lines), lines
