"""``rota schedule edit``, ``reset`` and ``history``, and overrides as ``rota schedules`` shows
them.

The round trip runs on every backend; the rest is CLI behaviour over the same calls, on SQLite.
The commands read the real clock (the test's ``FakeClock`` is the application's), so a next
run is checked against the first tick at or after the moments around the call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import click
import pytest

from rota import JobContext, Rota
from rota.core.cron import Cron
from tests.cli.conftest import Cli, parsed
from tests.cli.test_inspect import columns

SQLITE = pytest.mark.parametrize("db", ["sqlite"], indirect=True)


@pytest.fixture
def report(rota: Rota) -> str:
    """A schedule defined in code, ``*/5 * * * *`` in UTC, synced to the database."""

    @rota.task(cron="*/5 * * * *", name="report")
    def handler(ctx: JobContext) -> None: ...

    rota.drain()
    return "report"


def around(call: Callable[[], Any], cron: str, tz: str) -> tuple[Any, set[datetime]]:
    """What ``call`` returns and the next runs it may have set: the rule's first tick at or
    after the moment it started or the one it ended (a tick may fall in between)."""
    rule = Cron(cron, tz)
    before = datetime.now(timezone.utc)
    result = call()
    return result, {rule.first_run(before), rule.first_run(datetime.now(timezone.utc))}


def test_edit_override_reset_and_history_round_trip(rota: Rota, report: str, cli: Cli) -> None:
    edited, expected = around(
        lambda: cli(
            "schedule", "edit", report, "--cron", "*/10 * * * *", "--tz", "Asia/Tokyo", "-y"
        ),
        "*/10 * * * *",
        "Asia/Tokyo",
    )
    assert edited.exit_code == 0, edited.output
    preview = edited.stdout.split("next 5 runs:\n")[1].splitlines()
    header, _rule, *runs, done = preview
    assert columns(header) == ["Asia/Tokyo", "UTC"]
    assert len(runs) == 5 and all(columns(row)[0].endswith("+09:00") for row in runs)
    assert done.startswith(
        "schedule 'report' overridden: */10 * * * * (Asia/Tokyo) instead of the code's "
        "*/5 * * * * (UTC), until `rota schedule reset`; next run at "
    )
    schedule = rota.get_schedule(report)
    assert (schedule.spec.cron, schedule.spec.tz) == ("*/10 * * * *", "Asia/Tokyo")
    assert (schedule.code_cron, schedule.code_tz, schedule.overridden) == (
        "*/5 * * * *",
        "UTC",
        True,
    )
    assert schedule.next_run_at in expected
    first_utc = datetime.fromisoformat(columns(runs[0])[1].replace("Z", "+00:00"))
    assert first_utc in expected, "the preview's first run is the one written"

    listed = cli("schedules")
    assert listed.exit_code == 0, listed.output
    (row,) = listed.stdout.splitlines()[2:]
    assert columns(row)[1:3] == [
        "*/10 * * * * (override; code: */5 * * * *)",
        "Asia/Tokyo (code: UTC)",
    ]
    (data,) = parsed(cli("schedules", "--json"))
    assert (data["cron"], data["code_cron"], data["code_tz"]) == (
        "*/10 * * * *",
        "*/5 * * * *",
        "UTC",
    )
    assert data["failing"] is False

    reset, expected = around(lambda: cli("schedule", "reset", report), "*/5 * * * *", "UTC")
    assert reset.exit_code == 0, reset.output
    assert reset.stdout.startswith("schedule 'report' back to the code's rule */5 * * * * (UTC)")
    schedule = rota.get_schedule(report)
    assert (schedule.spec.cron, schedule.spec.tz, schedule.overridden) == (
        "*/5 * * * *",
        "UTC",
        False,
    )
    assert schedule.next_run_at in expected
    again = cli("schedule", "reset", report)
    assert again.exit_code == 1 and "schedule 'report' is not overridden" in again.stderr

    changes = parsed(cli("schedule", "history", report, "--json"))
    assert [(c["action"], c["actor"]) for c in changes] == [
        ("reset", "cli"),
        ("overridden", "cli"),
        ("created", "code"),
    ]
    assert changes[1]["old"] == {"cron": "*/5 * * * *", "tz": "UTC"}
    assert changes[1]["new"] == {"cron": "*/10 * * * *", "tz": "Asia/Tokyo"}
    shown = cli("schedule", "history", report, "--limit", "2")
    assert shown.exit_code == 0, shown.output
    header, _rule, *rows = shown.stdout.splitlines()
    assert columns(header) == ["at", "action", "actor", "change"]
    assert [columns(line)[1:3] for line in rows] == [["reset", "cli"], ["overridden", "cli"]]
    assert "cron: */10 * * * * -> */5 * * * *; tz: Asia/Tokyo -> UTC" in rows[0]


@SQLITE
def test_edit_asks_first_and_a_no_changes_nothing(rota: Rota, report: str, cli: Cli) -> None:
    declined = cli("schedule", "edit", report, "--cron", "0 * * * *", input="n\n")
    assert declined.exit_code == 1
    assert "next 5 runs:" in declined.stdout and "Change it? [y/N]: n" in declined.stdout
    assert "schedule 'report' not changed" in declined.stderr
    schedule = rota.get_schedule(report)
    assert (schedule.spec.cron, schedule.overridden) == ("*/5 * * * *", False)
    assert [change.action.value for change in rota.schedule_history(report)] == ["created"]

    accepted = cli("schedule", "edit", report, "--tz", "Europe/Berlin", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "schedule 'report' overridden: */5 * * * * (Europe/Berlin)" in accepted.stdout
    schedule = rota.get_schedule(report)
    assert (schedule.spec.cron, schedule.spec.tz) == ("*/5 * * * *", "Europe/Berlin")

    back = cli("schedule", "edit", report, "--tz", "UTC", "--yes")
    assert back.exit_code == 0, back.output
    assert "the code's own rule: the override ends" in back.stdout
    assert rota.get_schedule(report).overridden is False
    same = cli("schedule", "edit", report, "--cron", "*/5 * * * *")
    assert (
        same.exit_code == 0 and "already runs */5 * * * * (UTC): nothing to change" in same.stdout
    )


@SQLITE
def test_a_bad_rule_or_target_is_refused_before_anything_is_asked(
    rota: Rota, report: str, cli: Cli
) -> None:
    bad = cli("schedule", "edit", report, "--cron", "*/61 * * * *", input="y\n")
    assert bad.exit_code == 1
    assert "INVALID_CRON: invalid cron expression '*/61 * * * *': bad minute field" in bad.stderr
    assert "Change it?" not in bad.stdout
    zone = cli("schedule", "edit", report, "--tz", "Mars/Olympus", input="y\n")
    assert (
        zone.exit_code == 1 and "INVALID_TIMEZONE: unknown time zone 'Mars/Olympus'" in zone.stderr
    )
    assert [change.action.value for change in rota.schedule_history(report)] == ["created"]

    neither = cli("schedule", "edit", report)
    assert neither.exit_code == 2
    assert "give --cron, --tz, --overlap or some of them" in neither.stderr
    for command in (
        ["edit", "nope", "--cron", "0 * * * *"],
        ["reset", "nope"],
        ["history", "nope"],
    ):
        missing = cli("schedule", *command)
        assert missing.exit_code == 1
        assert "SCHEDULE_NOT_FOUND: schedule 'nope' does not exist" in missing.stderr

    rota.schedule("0 3 * * *", report, name="nightly")
    updated = cli("schedule", "edit", "nightly", "--cron", "0 4 * * *", "--yes")
    assert (
        updated.exit_code == 0 and "schedule 'nightly' updated: 0 4 * * * (UTC)" in updated.stdout
    )
    runtime = cli("schedule", "reset", "nightly")
    assert runtime.exit_code == 1 and "made at runtime, not in code" in runtime.stderr
    rota.cancel("nightly")
    ended = cli("schedule", "edit", "nightly", "--cron", "0 5 * * *", "--yes")
    assert ended.exit_code == 1
    assert "schedule 'nightly' is cancelled: only active or paused schedules" in ended.stderr


@SQLITE
def test_a_change_made_while_asking_refuses_the_edit(
    rota: Rota, report: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def meanwhile(text: str, default: bool = False) -> bool:
        rota.update_schedule(report, cron="0 * * * *")  # someone else, while the user reads
        return True

    monkeypatch.setattr(click, "confirm", meanwhile)
    refused = cli("schedule", "edit", report, "--cron", "*/10 * * * *")
    assert refused.exit_code == 1
    assert "SCHEDULE_CONFLICT: schedule 'report' was changed by someone else" in refused.stderr
    assert rota.get_schedule(report).spec.cron == "0 * * * *"


@SQLITE
def test_every_schedule_change_of_the_cli_is_recorded_as_cli(
    rota: Rota, report: str, cli: Cli
) -> None:
    for command in ("pause", "resume", "cancel"):
        assert cli(command, report).exit_code == 0
    actors = [(c.action.value, c.actor) for c in rota.schedule_history(report)]
    assert actors == [
        ("cancelled", "cli"),
        ("resumed", "cli"),
        ("paused", "cli"),
        ("created", "code"),
    ]


@SQLITE
def test_edit_changes_the_overlap_policy_alone(rota: Rota, report: str, cli: Cli) -> None:
    before = rota.get_schedule(report).next_run_at
    edited = cli("schedule", "edit", report, "--overlap", "queue", "-y")
    assert edited.exit_code == 0, edited.output
    assert "new rule" in edited.stdout and "overlap queue" in edited.stdout
    assert (
        "schedule 'report' overridden: */5 * * * * (UTC) overlap queue instead of the code's "
        "*/5 * * * * (UTC), until `rota schedule reset`"
    ) in edited.stdout
    schedule = rota.get_schedule(report)
    assert (schedule.spec.overlap, schedule.code_overlap) == ("queue", "skip")
    assert schedule.next_run_at == before, "the rule's ticks did not change"
    refused = cli("schedule", "edit", report, "--overlap", "never", "-y")
    assert refused.exit_code == 2 and "'never' is not one of" in refused.stderr
    listed = cli("schedules", "--json")
    assert listed.exit_code == 0
    assert "queue" in listed.stdout and '"code_overlap": "skip"' in listed.stdout
