"""Issue 15, finding 4: stored text reaches terminals and logs escaped, never raw.

An error message, an argument or a name in the database (written by a handler, another service
or by hand) may hold terminal escapes, rich markup, bidi overrides or a newline. ``rota job``,
``jobs``, ``schedules`` and the control commands show such characters escaped, on a pipe and on
a real terminal; a text log keeps one line a record; a JSON log stays one JSON object a line,
carrying the text exactly.
"""

from __future__ import annotations

import json
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from fcntl import ioctl
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from rota import JobContext, Rota
from rota.observe.events import logfmt
from rota.observe.logs import INDENT, formatter
from tests.cli import conftest as cli_tests
from tests.cli.conftest import Cli, parsed
from tests.cli.processes import running
from tests.conftest import Database
from tests.helpers import migrated, wait_until

cli = cli_tests.cli
"""The fixture the command tests use: ``cli(*args)`` runs ``rota`` against the test's database."""

EVIL = "\x1b[2J\x1b[31mpwned\x1b]0;title\x07 [red]x[/red] \u202eexe.txt\u2069 \x9b6n \r\x08."
"""Clear the screen, paint it red, retitle the terminal (ended by BEL), rich markup, a bidi
override and isolate, a C1 CSI, a carriage return and a backspace."""
FORGED = "\nFORGED 2026-01-01 ERROR rota: fake"
SHOWN = (
    "\\x1b[2J\\x1b[31mpwned\\x1b]0;title\\x07 [red]x[/red] \\u202eexe.txt\\u2069 \\x9b6n \\r\\x08."
)
"""``EVIL`` as the CLI and text logs show it: every control character as its escape."""
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
"""What must never be printed raw: C0 controls but the newline, DEL, C1 controls, bidi and
zero-width format characters, line and paragraph separators."""
SGR = re.compile(r"\x1b\[[0-9;]*m")
"""Colour and weight: the only escape sequences rota itself writes to a terminal."""


def no_raw(output: str) -> None:
    found = RAW.search(output)
    assert found is None, f"raw {found.group()!r} at {found.start()} in {output!r}"


def forged_line(output: str) -> bool:
    return any(line.startswith("FORGED") for line in output.splitlines())


def tamper(db: Database, table: str, where: dict[str, Any], **values: Any) -> None:
    """Write ``values`` into the rows the way another service or a hand-written UPDATE could,
    past rota's own checks on names."""
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    condition = " AND ".join(f"{column} = :where_{column}" for column in where)
    engine = db.engine()
    try:
        with engine.begin() as connection:
            connection.execute(
                text(f"UPDATE {db.table(table)} SET {assignments} WHERE {condition}"),
                {**values, **{f"where_{column}": value for column, value in where.items()}},
            )
    finally:
        engine.dispose()


@pytest.fixture
def failed_job(db: Database, rota: Rota) -> int:
    """A job that failed with ``EVIL`` and ``FORGED`` in its message and traceback, took
    ``EVIL`` as arguments, and whose names in the database hold ``EVIL`` too."""

    @rota.task(retries=0)
    def fragile(ctx: JobContext, note: str, *, label: str) -> None:
        raise RuntimeError(EVIL + FORGED)

    job_id = rota.queue(fragile, EVIL, label=EVIL, unique_key="k")
    assert rota.drain().failed == 1
    tamper(
        db,
        "jobs",
        {"id": job_id},
        task="t" + EVIL,
        queue="q" + EVIL,
        unique_key="k" + EVIL,
        schedule="s" + EVIL,
        lease_owner="w" + EVIL[:40],
    )
    return job_id


def test_rota_job_shows_every_stored_text_escaped(failed_job: int, cli: Cli) -> None:
    result = cli("job", str(failed_job))
    assert result.exit_code == 0, result.output
    output = result.stdout
    no_raw(output)
    for label in ("task", "queue", "unique key", "schedule"):
        (line,) = [line for line in output.splitlines() if line.startswith(label + " ")]
        assert line.endswith(SHOWN), line
    assert f"args:   {json.dumps([EVIL])}" in output, "JSON's own escapes, \\u001b for ESC"
    assert "[red]x[/red]" in output, "rich markup is shown as it is, not applied"
    assert f"builtins.RuntimeError: {SHOWN}\\nFORGED 2026-01-01 ERROR rota: fake" in output
    assert f"\n    RuntimeError: {SHOWN}\n    FORGED 2026-01-01" in output, (
        "the traceback keeps its lines, indented under the attempt"
    )
    assert not forged_line(output)

    exact = parsed(cli("job", str(failed_job), "--json"))
    assert exact["errors"][0]["message"] == EVIL + FORGED
    assert exact["errors"][0]["traceback"].endswith(f"RuntimeError: {EVIL}{FORGED}\n")
    assert (exact["task"], exact["args"], exact["kwargs"]) == ("t" + EVIL, [EVIL], {"label": EVIL})


def test_rota_jobs_shows_stored_names_escaped(failed_job: int, cli: Cli) -> None:
    result = cli("jobs")
    assert result.exit_code == 0, result.output
    no_raw(result.stdout)
    (row,) = [line for line in result.stdout.splitlines() if line.startswith(str(failed_job))]
    assert f"t{SHOWN}" in row and f"q{SHOWN}" in row, row
    (listed,) = parsed(cli("jobs", "--json"))
    assert (listed["task"], listed["queue"]) == ("t" + EVIL, "q" + EVIL)


def test_rota_schedules_shows_stored_names_escaped(db: Database, rota: Rota, cli: Cli) -> None:
    @rota.task
    def nightly(ctx: JobContext) -> None: ...

    rota.schedule("0 3 * * *", nightly, name="nightly")
    tamper(db, "schedules", {"name": "nightly"}, name="n" + EVIL, task="t" + EVIL)
    result = cli("schedules")
    assert result.exit_code == 0, result.output
    no_raw(result.stdout)
    assert f"n{SHOWN}" in result.stdout and f"t{SHOWN}" in result.stdout, result.stdout


def test_rota_check_shows_stranded_task_names_escaped(db: Database, rota: Rota, cli: Cli) -> None:
    @rota.task
    def waiting(ctx: JobContext) -> None: ...

    job_id = rota.queue(waiting)
    tamper(db, "jobs", {"id": job_id}, task="t" + EVIL, queue="q" + EVIL)
    result = cli("check")
    assert result.exit_code == 1, result.output
    no_raw(result.output)
    assert f"t{SHOWN}" in result.stdout and f"q{SHOWN}" in result.stdout, result.stdout


def test_control_commands_echo_stored_names_escaped(
    db: Database, rota: Rota, failed_job: int, cli: Cli
) -> None:
    @rota.task
    def nightly(ctx: JobContext) -> None: ...

    rota.schedule("0 3 * * *", nightly, name="nightly")
    tamper(db, "schedules", {"name": "nightly"}, name="n" + EVIL)
    outputs = [
        cli("retry", str(failed_job)),
        cli("cancel", str(failed_job)),
        cli("pause", "--all"),
        cli("resume", "--all"),
    ]
    for result in outputs:
        assert result.exit_code == 0, result.output
        no_raw(result.output)
    assert outputs[0].stdout.startswith(f"job {failed_job} (t{SHOWN}) is pending again")
    assert outputs[1].stdout.startswith(f"job {failed_job} (t{SHOWN}) cancelled")
    assert f"n{SHOWN}" in outputs[2].stdout and f"n{SHOWN}" in outputs[3].stdout


@pytest.mark.sqlite_only  # the CLI's checks of its arguments; stored text is on every backend above
@pytest.mark.parametrize(
    "arguments",
    [
        ("job", EVIL),
        ("jobs", "--state", EVIL),
        ("cancel", EVIL),
        ("pause", "--queue", EVIL),
        ("run-now", EVIL),
    ],
)
def test_errors_about_what_a_user_typed_show_it_escaped(
    rota: Rota, cli: Cli, arguments: tuple[str, ...]
) -> None:
    rota.jobs()  # the schema exists: the command gets as far as the name it was given
    result = cli(*arguments)
    assert result.exit_code in (1, 2), result.output
    no_raw(result.output)
    assert "\\x1b[2J" in result.output, result.output


# -- on a terminal ------------------------------------------------------------------------------


def on_terminal(*arguments: str) -> str:
    """What ``python -m rota ...`` writes to a pseudo-terminal 400 columns wide, where rich
    colours its output; CR LF (the terminal's line ends) read as LF."""
    leader, follower = pty.openpty()
    ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
    # The terminal's size, not a COLUMNS or LINES the test runner may have set.
    ignored = {"NO_COLOR", "COLUMNS", "LINES"}
    environment = {key: value for key, value in os.environ.items() if key not in ignored}
    environment["TERM"] = "xterm-256color"
    with subprocess.Popen(
        [sys.executable, "-m", "rota", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=environment,
    ) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=60) == 0, b"".join(chunks)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["job", "jobs"])
def test_on_a_real_terminal_only_rotas_own_colours_are_escapes(
    db: Database, failed_job: int, command: str
) -> None:
    arguments = [command, "--url", db.url, "--table-prefix", db.prefix]
    if command == "job":
        arguments.append(str(failed_job))
    output = on_terminal(*arguments)
    assert SGR.search(output), "rich took the pseudo-terminal for a terminal: it styled the output"
    plain = SGR.sub("", output)
    no_raw(plain)
    assert f"t{SHOWN}" in plain, plain
    assert not forged_line(plain)


# -- logs ---------------------------------------------------------------------------------------


def failure(message: str) -> logging.LogRecord:
    try:
        raise RuntimeError(message)
    except RuntimeError:
        return logging.LogRecord(
            "rota.task.x", logging.ERROR, __file__, 1, "caught %s", (message,), sys.exc_info()
        )


def test_a_text_log_record_starts_one_line_only() -> None:
    record = failure(EVIL + FORGED)
    line = formatter("text").format(record)
    first, *traceback = line.split("\n")
    assert first.endswith(f"rota.task.x: caught {SHOWN}\\nFORGED 2026-01-01 ERROR rota: fake")
    assert traceback[0] == INDENT + "Traceback (most recent call last):"
    assert traceback[-2:] == [
        f"{INDENT}RuntimeError: {SHOWN}",
        f"{INDENT}FORGED 2026-01-01 ERROR rota: fake",
    ]
    assert all(line.startswith(INDENT) for line in traceback), "only a record starts at the margin"
    no_raw(line)


def test_a_json_log_record_is_one_line_of_json_with_the_text_exact() -> None:
    record = failure(EVIL + FORGED)
    line = formatter("json").format(record)
    assert "\n" not in line
    no_raw(line)
    data = json.loads(line)
    assert data["message"] == f"caught {EVIL}{FORGED}"
    assert data["exception"].endswith(f"RuntimeError: {EVIL}{FORGED}")


APP = """\
import os
from rota import Rota

app = Rota(os.environ["ROTA_TEST_URL"], table_prefix=os.environ["ROTA_TEST_PREFIX"],
           poll_interval=0.1)

@app.task(retries=0)
def fragile(ctx, note):
    ctx.logger.warning("about to fail on %s", note)
    raise RuntimeError(note)
"""


@pytest.fixture
def control(db: Database) -> Iterator[Rota]:
    with migrated(db.url, db.prefix) as rota:
        yield rota


def worker_output(control: Rota, db: Database, tmp_path: Path, log_format: str) -> str:
    """Everything a real ``rota worker`` writes while a job fails on ``EVIL`` + ``FORGED``."""
    app = tmp_path / f"fragile_{log_format}.py"
    app.write_text(APP)
    environment = {"ROTA_TEST_URL": db.url, "ROTA_TEST_PREFIX": db.prefix}
    with running(
        "worker",
        f"{app}:app",
        "--log-format",
        log_format,
        "--grace",
        "5",
        logs=tmp_path / log_format,
        env=environment,
    ) as worker:
        job_id = control.queue("fragile", EVIL + FORGED)
        wait_until(lambda: worker.alive() and control.job(job_id).state.is_final, timeout=30)
        assert worker.stop() == 0, worker.output()
    return worker.output()


@pytest.mark.slow
def test_a_real_workers_text_log_keeps_one_line_a_record(
    control: Rota, db: Database, tmp_path: Path
) -> None:
    output = worker_output(control, db, tmp_path, "text")
    no_raw(output)
    lines = output.splitlines()
    assert not forged_line(output), output
    record_start = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ +\S+: ")
    assert all(record_start.match(line) or line.startswith(INDENT) for line in lines), output
    (failed,) = [line for line in lines if " job.failed " in line]
    assert f'error="{SHOWN}\\nFORGED 2026-01-01 ERROR rota: fake"' in failed, failed
    (warned,) = [line for line in lines if "about to fail on" in line]
    assert warned.endswith(f"about to fail on {SHOWN}\\nFORGED 2026-01-01 ERROR rota: fake")


@pytest.mark.slow
def test_a_real_workers_json_log_keeps_the_message_intact(
    control: Rota, db: Database, tmp_path: Path
) -> None:
    output = worker_output(control, db, tmp_path, "json")
    no_raw(output)
    records = [json.loads(line) for line in output.splitlines()]
    (failed,) = [r for r in records if r.get("event") == "job.failed"]
    assert failed["error"] == EVIL + FORGED
    (warned,) = [r for r in records if r.get("message", "").startswith("about to fail on")]
    assert warned["message"] == f"about to fail on {EVIL}{FORGED}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain", "plain"),
        ("x task=other", '"x task=other"'),
        ('say "hi"', '"say \\x22hi\\x22"'),
        ("", '""'),
        ("a\nb", "a\\nb"),
    ],
)
def test_a_logfmt_value_cannot_pass_for_another_field(value: str, shown: str) -> None:
    assert logfmt(value) == shown
    line = f"job.failed error={logfmt(value)} task=real"
    fields = re.findall(r'(?:^| )(\w+)=(?:"[^"]*"|[^ "]*)(?= |$)', line)
    assert fields == ["error", "task"], line
