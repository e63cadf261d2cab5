"""``rota schedules apply FILE``: the overrides made to match a TOML file, through the CLI on a
real database (SQLite; the round trip on MariaDB too), at 80 columns.

Checked: the diff printed one line per change, --dry-run changing nothing, each change in the
history under ``file:<FILE>``, a second run printing "no changes" and writing nothing, a bad
file (any problem at all) changing nothing with exit code 2, and --prune resetting only the
overrides of code schedules the file leaves out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rota import JobContext, Rota, ScheduleAction, ScheduleConflict
from rota.cli import main
from tests.conftest import Database

SQLITE = pytest.mark.parametrize("db", ["sqlite"], indirect=True)
Apply = Callable[..., tuple[Result, str]]
ROUND_TRIP = pytest.mark.parametrize("db", ["sqlite", "mariadb", "postgres"], indirect=True)


@pytest.fixture
def apply(db: Database, tmp_path: Path) -> Apply:
    def run(text: str, *options: str) -> tuple[Result, str]:
        """Write ``text`` to a file and apply it; the result and the file's path."""
        path = tmp_path / "schedules.toml"
        path.write_text(text, encoding="utf-8")
        database = ["--url", db.url, "--table-prefix", db.prefix]
        runner = CliRunner(env={"COLUMNS": "80"})
        result = runner.invoke(main, ["schedules", "apply", str(path), *options, *database])
        return result, str(path)

    return run


@pytest.fixture
def app(rota: Rota) -> Rota:
    """``report`` in code (``*/5 * * * *``, UTC, skip) and ``nightly`` made at runtime."""

    @rota.task(cron="*/5 * * * *", name="report")
    def report(ctx: JobContext) -> None: ...

    rota.drain("nothing-here")
    rota.schedule("0 3 * * *", "report", name="nightly", tz="Europe/Berlin")
    return rota


FILE = """
[report]
cron = "*/10 * * * *"
overlap = "queue"
enabled = false

[nightly]
tz = "Asia/Tokyo"
"""
LINES = [
    "report: cron */5 * * * * -> */10 * * * * (override)",
    "report: overlap skip -> queue (override)",
    "report: pause",
    "nightly: tz Europe/Berlin -> Asia/Tokyo",
]


def history(rota: Rota, name: str) -> list[tuple[ScheduleAction, str]]:
    return [(change.action, change.actor) for change in rota.schedule_history(name)]


@ROUND_TRIP
def test_apply_prints_the_diff_changes_once_and_records_the_file(app: Rota, apply: Apply) -> None:
    before = {name: history(app, name) for name in ("report", "nightly")}
    dry, _ = apply(FILE, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.splitlines() == [*LINES, "dry run: 4 changes not applied"]
    assert {name: history(app, name) for name in before} == before, "a dry run writes nothing"

    done, path = apply(FILE)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [*LINES, "applied 4 changes to 2 schedules"]
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    report, nightly = app.get_schedule("report"), app.get_schedule("nightly")
    assert (report.spec.cron, report.spec.overlap, report.state.value) == (
        "*/10 * * * *",
        "queue",
        "paused",
    )
    assert (report.code_cron, report.code_overlap) == ("*/5 * * * *", "skip")
    assert (nightly.spec.cron, nightly.spec.tz) == ("0 3 * * *", "Asia/Tokyo"), "cron kept"
    actor = f"file:{path}"
    assert history(app, "report")[:2] == [
        (ScheduleAction.PAUSED, actor),
        (ScheduleAction.OVERRIDDEN, actor),
    ]
    assert history(app, "nightly")[0] == (ScheduleAction.UPDATED, actor)

    after = {name: history(app, name) for name in before}
    again, _ = apply(FILE)
    assert (again.exit_code, again.stdout) == (0, "no changes\n")
    assert {name: history(app, name) for name in before} == after, "idempotent"


@SQLITE
def test_a_table_without_keys_means_the_codes_rule_and_enabled_resumes(
    app: Rota, apply: Apply
) -> None:
    apply(FILE)
    result, _ = apply("[report]\nenabled = true\n[nightly]\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "report: cron */10 * * * * -> */5 * * * * (the code's)",
        "report: overlap queue -> skip (the code's)",
        "report: resume",
        "applied 3 changes to 1 schedule",
    ]
    report = app.get_schedule("report")
    assert (report.overridden, report.state.value) == (False, "active")
    assert history(app, "report")[1][0] is ScheduleAction.RESET
    assert app.get_schedule("nightly").spec.tz == "Asia/Tokyo", "runtime: a key left out keeps"


@SQLITE
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[report\ncron = '* * * * *'", "not valid TOML"),
        ("[report]\ncorn = '* * * * *'", "[report]: unknown key corn"),
        ("[report]\ncron = '* * * *'", "[report]: cron expression"),
        ("[report]\ntz = 'Mars/Olympus'", "[report]: unknown time zone"),
        ("[report]\noverlap = 'sometimes'", "[report]: overlap must be one of allow, skip, queue"),
        ("[report]\nenabled = 'no'", "[report]: enabled must be true or false"),
        ("[report]\ncron = 5", "[report]: cron must be a string"),
        ("report = 1", "'report' must be a table"),
        ("[report]\ncron = '0 * * * *'\n[missing]\n", "[missing]: no schedule of that name"),
    ],
)
def test_a_bad_file_changes_nothing_and_exits_2(
    app: Rota, apply: Apply, text: str, problem: str
) -> None:
    before = [history(app, name) for name in ("report", "nightly")]
    result, path = apply(text)
    assert result.exit_code == 2, result.output
    assert f"{path}: nothing changed:" in result.stderr and problem in result.stderr
    assert result.stdout == ""
    assert [history(app, name) for name in ("report", "nightly")] == before
    assert app.get_schedule("report").spec.cron == "*/5 * * * *"


@SQLITE
def test_every_problem_of_the_file_is_listed_at_once(app: Rota, apply: Apply) -> None:
    result, _ = apply("[report]\ncron = 'x'\noverlap = 'no'\n[nightly]\ntz = 'Nowhere'\n")
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("  [")] == [
        "  [report]: overlap must be one of allow, skip, queue, not 'no'",
        "  [report]: cron expression 'x' has 1 fields; expected 5: minute hour "
        "day-of-month month day-of-week",
        "  [nightly]: unknown time zone 'Nowhere': use an IANA name such as 'Europe/Berlin'",
    ]


@SQLITE
def test_prune_resets_only_the_overrides_of_code_schedules_left_out(
    app: Rota, apply: Apply
) -> None:
    app.update_schedule("report", cron="0 * * * *", overlap="allow")
    app.pause("report")
    kept, _ = apply("[nightly]\ncron = '0 4 * * *'\n")
    assert kept.stdout.splitlines()[0] == "nightly: cron 0 3 * * * -> 0 4 * * *"
    assert app.get_schedule("report").overridden, "without --prune a schedule left out stays"
    pruned, path = apply("[nightly]\ncron = '0 4 * * *'\n", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert pruned.stdout.splitlines() == [
        "report: cron 0 * * * * -> */5 * * * * (the code's)",
        "report: overlap allow -> skip (the code's)",
        "applied 2 changes to 1 schedule",
    ]
    report = app.get_schedule("report")
    assert (report.overridden, report.state.value) == (False, "paused"), "state is not pruned"
    assert history(app, "report")[0] == (ScheduleAction.RESET, f"file:{path}")
    assert app.get_schedule("nightly").spec.cron == "0 4 * * *", "runtime: never pruned"


@SQLITE
def test_a_schedule_changed_meanwhile_stops_the_apply_with_exit_1(
    app: Rota, apply: Apply, monkeypatch: pytest.MonkeyPatch
) -> None:
    def conflict(self: Rota, name: str, *args: object, **kwargs: object) -> None:
        raise ScheduleConflict(f"schedule {name!r} was changed by someone else meanwhile")

    monkeypatch.setattr(Rota, "update_schedule", conflict)
    result, _ = apply(FILE)
    assert result.exit_code == 1
    assert "0 of 2 schedules were changed before it: run the command again" in result.stderr


@SQLITE
def test_an_ended_schedule_in_the_file_is_refused(app: Rota, apply: Apply) -> None:
    app.cancel("nightly")
    result, _ = apply("[nightly]\nenabled = true\n")
    assert result.exit_code == 2
    assert "[nightly]: the schedule is cancelled: it cannot change" in result.stderr
