"""``rota retry``, ``cancel``, ``pause``, ``resume`` and ``run-now``, and the usage errors."""

from __future__ import annotations

import re
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import JobState
from rota.core.schedules import ScheduleState
from rota.testing import FakeClock
from tests.cli.conftest import Cli

S = timedelta(seconds=1)


def test_retry_and_cancel_jobs(rota: Rota, clock: FakeClock, cli: Cli) -> None:
    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("no")

    @rota.task
    def later(ctx: JobContext) -> None: ...

    failed = rota.queue(boom)
    rota.drain()
    waiting = rota.queue(later, delay=3600)
    running = rota.queue(later)
    claimed = rota.store.jobs.claim(
        "w1", ["default"], ["later"], 5, clock.now(), clock.now() + 60 * S
    )
    assert [job.id for job in claimed] == [running]

    retried = cli("retry", str(failed))
    assert retried.exit_code == 0, retried.output
    assert retried.stdout == f"job {failed} (boom) is pending again, with a fresh attempt budget\n"
    assert rota.job(failed).state is JobState.PENDING
    again = cli("retry", str(failed))
    assert again.exit_code == 1
    assert f"job {failed} is pending: only failed or cancelled jobs can be retried" in again.stderr

    cancelled = cli("cancel", str(waiting))
    assert cancelled.exit_code == 0 and cancelled.stdout == f"job {waiting} (later) cancelled\n"
    assert rota.job(waiting).state is JobState.CANCELLED
    twice = cli("cancel", str(waiting))
    assert twice.exit_code == 1
    assert f"job {waiting} has ended (cancelled): nothing to cancel" in twice.stderr
    assert cli("retry", str(waiting)).exit_code == 0
    assert rota.job(waiting).state is JobState.PENDING

    stopping = cli("cancel", str(running))
    assert stopping.exit_code == 0
    assert "is running: its worker stops it at the next heartbeat" in stopping.stdout
    assert rota.job(running).cancel_requested

    for command in ("retry", "cancel"):
        missing = cli(command, "999999")
        assert missing.exit_code == 1
        assert "JOB_NOT_FOUND: job 999999 does not exist" in missing.stderr


def test_pause_resume_run_now_and_cancel_a_schedule(rota: Rota, cli: Cli) -> None:
    @rota.task
    def cleanup(ctx: JobContext) -> None: ...

    name = rota.schedule("0 3 * * *", cleanup, name="nightly-cleanup")

    def state() -> ScheduleState:
        schedule = rota.store.schedules.get(name)
        assert schedule is not None
        return schedule.state

    paused = cli("pause", name)
    assert paused.exit_code == 0, paused.output
    assert "schedule 'nightly-cleanup' paused" in paused.stdout
    assert state() is ScheduleState.PAUSED
    twice = cli("pause", name)
    assert twice.exit_code == 1 and "is paused: only active schedules" in twice.stderr

    resumed = cli("resume", name)
    assert resumed.exit_code == 0, resumed.output
    assert re.fullmatch(
        r"schedule 'nightly-cleanup' resumed: next run at \S+ 03:00:00Z\n", resumed.stdout
    )
    assert state() is ScheduleState.ACTIVE
    again = cli("resume", name)
    assert again.exit_code == 1 and "is active: only paused schedules" in again.stderr

    now = cli("run-now", name)
    assert now.exit_code == 0, now.output
    found = re.fullmatch(
        r"queued job (\d+) of schedule 'nightly-cleanup' \(task cleanup\)\n", now.stdout
    )
    assert found is not None
    job = rota.job(int(found.group(1)))
    assert (job.schedule, job.task, job.state) == (name, "cleanup", JobState.PENDING)
    assert "no live worker registers task 'cleanup'" in now.stderr

    everything = "1 schedule(s): nightly-cleanup; 1 queue(s): default\n"
    assert cli("pause", "--all").stdout == f"paused {everything}"
    assert rota.paused_queues() == ["default"]
    assert cli("pause", "--all").stdout == "nothing to be paused\n"
    assert cli("resume", "--all").stdout == f"resumed {everything}"
    assert rota.paused_queues() == []

    ended = cli("cancel", name)
    assert ended.exit_code == 0
    assert ended.stdout == "schedule 'nightly-cleanup' cancelled: it enqueues no more jobs\n"
    assert state() is ScheduleState.CANCELLED
    assert "is cancelled: nothing to cancel" in cli("cancel", name).stderr

    for command in ("pause", "resume", "run-now", "cancel"):
        missing = cli(command, "nope")
        assert missing.exit_code == 1
        assert "SCHEDULE_NOT_FOUND: schedule 'nope' does not exist" in missing.stderr
    numbered = cli("pause", "42")
    assert numbered.exit_code == 1 and "JOB_NOT_FOUND: job 42 does not exist" in numbered.stderr


def test_pause_and_resume_a_job_and_a_queue(rota: Rota, cli: Cli) -> None:
    @rota.task(queue="mail")
    def send(ctx: JobContext) -> None: ...

    job_id = rota.queue(send)
    paused = cli("pause", str(job_id))
    assert paused.stdout == f"job {job_id} paused: no worker claims it until it is resumed\n"
    assert rota.job(job_id).state is JobState.PAUSED
    twice = cli("pause", str(job_id))
    assert twice.exit_code == 1 and "is paused: only pending jobs can be paused" in twice.stderr
    assert cli("resume", str(job_id)).stdout == f"job {job_id} resumed: it is pending again\n"
    assert rota.job(job_id).state is JobState.PENDING

    stopped = cli("pause", "--queue", "mail")
    assert stopped.stdout == "queue 'mail' paused: no worker claims from it until it is resumed\n"
    assert rota.drain().total == 0
    assert "is already paused" in cli("pause", "--queue", "mail").stderr
    assert cli("resume", "--queue", "mail").stdout == "queue 'mail' resumed\n"
    assert rota.drain().succeeded == 1
    assert cli("resume", "--queue", "mail").exit_code == 1
    assert cli("pause", "--queue", "bad\x85name").exit_code == 1


COMMANDS = [
    "migrate",
    "worker",
    "prune",
    "demo",
    "check",
    "jobs",
    "job",
    "schedules",
    "schedule",
    "retry",
    "cancel",
    "pause",
    "resume",
    "delete",
    "update",
    "replay",
    "run-now",
    "dashboard",
]
SUBCOMMANDS = {"schedule": ["edit", "history", "reset"]}


def test_every_command_has_help_listed_in_order() -> None:
    runner = CliRunner()

    def listed(*group: str) -> list[str]:
        overview = runner.invoke(main, [*group, "--help"])
        assert overview.exit_code == 0, overview.output
        return [line.split()[0] for line in overview.stdout.split("Commands:")[1].splitlines()[1:]]

    assert listed() == COMMANDS
    commands = [[command] for command in COMMANDS if command not in SUBCOMMANDS]
    for group, subcommands in SUBCOMMANDS.items():
        assert listed(group) == subcommands
        commands += [[group, subcommand] for subcommand in subcommands]
    for command in commands:
        result = runner.invoke(main, [*command, "--help"])
        assert result.exit_code == 0, result.output
        if command[0] not in ("worker", "demo", "dashboard"):
            assert "--url" in result.stdout and "--table-prefix" in result.stdout


@pytest.mark.parametrize(
    "arguments",
    [
        ["jobs", "--state", "bogus"],
        ["jobs", "--limit", "0"],
        ["job", "abc"],
        ["retry", "abc"],
        ["pause"],
        ["resume", "nightly", "--all"],
        ["pause", "--queue", "mail", "--all"],
        ["pause", "7", "--queue", "mail"],
        ["jobs", "--url", "not a database url"],
        ["jobs", "--url", "sqlite:///x.db", "--table-prefix", "no-dashes!"],
        ["check", "--url", "oracle://scott:tiger@db/orcl"],
        ["schedule", "edit", "nightly"],
        ["schedule", "history", "nightly", "--limit", "0"],
    ],
)
def test_usage_errors_exit_2(arguments: list[str]) -> None:
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2, result.output
    assert "tiger" not in result.output


def test_a_five_thousand_digit_id_is_no_job_not_a_crash(rota: Rota, cli: Cli) -> None:
    rota.jobs()  # the schema exists
    huge = "9" * 5000
    for command in ("job", "retry", "cancel", "pause", "resume"):
        result = cli(command, huge)
        assert result.exit_code == 1, (command, result.output[:200])
        assert result.stderr.startswith("Error: JOB_NOT_FOUND: job 99999999999999999999... (5000")
        assert len(result.stderr) < 200 and "Traceback" not in result.output
    assert "job 9223372036854775808 does not exist" in cli("job", "9223372036854775808").stderr
    assert cli("job", "00000000000000000000000000000000000000000007").exit_code == 1


@pytest.mark.parametrize("prefix", ["x'; DROP TABLE y; --", 'q"uote', "a`b", "x" * 21, "é_"])
@pytest.mark.parametrize("command", ["migrate", "jobs", "prune", "check", "pause"])
def test_a_table_prefix_with_quotes_is_a_usage_error(
    tmp_path: Path, command: str, prefix: str
) -> None:
    url = f"sqlite:///{tmp_path}/rota.db"
    arguments = [command, "--all"] if command == "pause" else [command]
    result = CliRunner().invoke(main, [*arguments, "--url", url, "--table-prefix", prefix])
    assert result.exit_code == 2, result.output
    assert "CONFIG_ERROR: table_prefix must be up to 20 letters" in result.stderr
    if (tmp_path / "rota.db").exists():
        with sqlite3.connect(tmp_path / "rota.db") as connection:
            tables = connection.execute("SELECT name FROM sqlite_master").fetchall()
        assert tables == [], "nothing was created"
