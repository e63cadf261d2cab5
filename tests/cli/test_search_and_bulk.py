"""``rota jobs`` searching with filter options and cursors, the bulk forms of ``retry``,
``cancel``, ``pause``, ``resume`` and ``delete``, and ``rota update``, ``replay`` and
``delete ID``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.core.model import JobState
from tests.cli.conftest import Cli, parsed

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def failing(rota: Rota) -> list[int]:
    """Six jobs that failed: three tagged ``tenant:acme``, three ``tenant:other``."""

    @rota.task(retries=0)
    def charge(ctx: JobContext, order: int) -> None:
        raise RuntimeError(f"order {order}")

    ids = [
        rota.queue(charge, order, tags=[f"tenant:{'acme' if order % 2 else 'other'}"])
        for order in range(6)
    ]
    rota.drain()
    return ids


def test_filters_narrow_the_listing(rota: Rota, failing: list[int], cli: Cli) -> None:
    rota.queue("elsewhere", tags=["tenant:acme"])
    acme = parsed(cli("jobs", "--tag", "tenant:acme", "--json"))
    assert [job["id"] for job in acme["jobs"]] == [failing[0] + 6, *failing[5::-2]]
    assert acme["jobs"][1]["tags"] == ["tenant:acme"] and acme["next_cursor"] is None
    failed = parsed(cli("jobs", "--tag", "tenant:acme", "--state", "failed", "--json"))
    assert [job["id"] for job in failed["jobs"]] == failing[5::-2]
    by_error = parsed(cli("jobs", "--error", "EXECUTION_FAILED", "--args", "[3]", "--json"))
    assert [job["id"] for job in by_error["jobs"]] == [failing[3]]
    recent = parsed(cli("jobs", "--since", "3650d", "--task", "charge", "--json"))
    assert len(recent["jobs"]) == 6
    table = cli("jobs", "--tag", "tenant:other")
    assert table.exit_code == 0, table.output
    assert "tenant:other" in table.stdout and "EXECUTION_FAILED" in table.stdout
    assert "next page" not in table.stdout


def test_cursor_pages_do_not_overlap(rota: Rota, failing: list[int], cli: Cli) -> None:
    first = parsed(
        cli("jobs", "--state", "failed", "--limit", "4", "--cursor", "j999999", "--json")
    )
    assert [job["id"] for job in first["jobs"]] == failing[:1:-1]
    cursor = first["next_cursor"]
    second = parsed(cli("jobs", "--limit", "4", "--cursor", cursor, "--json"))
    assert [job["id"] for job in second["jobs"]] == failing[1::-1]
    assert second["next_cursor"] is None
    shown = cli("jobs", "--tag", "tenant:acme", "--limit", "1")
    assert shown.exit_code == 0 and "next page: --cursor j" in shown.stdout


def test_plain_options_list_as_before(rota: Rota, failing: list[int], cli: Cli) -> None:
    listed = parsed(cli("jobs", "--state", "failed", "--json"))
    assert isinstance(listed, list) and [job["id"] for job in listed] == failing[::-1]
    assert "tags" not in listed[0]  # the plain listing does not read them


def test_bulk_retry_with_yes_changes_the_matching_jobs(
    rota: Rota, failing: list[int], cli: Cli
) -> None:
    result = cli("retry", "--tag", "tenant:acme", "--yes")
    assert result.exit_code == 0, result.output
    assert result.stdout == "3 jobs match\n3 jobs retried\n"
    states = {job_id: rota.job(job_id).state for job_id in failing}
    assert [job_id for job_id, state in states.items() if state is JobState.PENDING] == (
        failing[1::2]
    )
    (recorded,) = rota.store.search.bulk_actions(5)
    assert (recorded.actor, recorded.action, recorded.jobs) == ("cli", "retry", 3)
    assert recorded.filter == {"tags": ["tenant:acme"]}


def test_declining_the_confirmation_changes_nothing(
    rota: Rota, failing: list[int], cli: Cli
) -> None:
    result = cli("delete", "--state", "failed", input="n\n")
    assert result.exit_code == 0, result.output
    assert "6 jobs match" in result.stdout and "nothing changed" in result.stdout
    assert all(rota.job(job_id).state is JobState.FAILED for job_id in failing)
    agreed = cli("cancel", "--state", "failed", input="y\n")  # final jobs: none cancelled
    assert agreed.exit_code == 0 and "0 jobs cancelled" in agreed.stdout


def test_bulk_pause_and_resume_keep_queue_for_whole_queues(rota: Rota, cli: Cli) -> None:
    ids = [rota.queue("later", n, queue="mail", delay=600) for n in range(3)]
    paused = cli("pause", "--in-queue", "mail", "--yes")
    assert paused.stdout.splitlines() == ["3 jobs match", "3 jobs paused"]
    assert {rota.job(job_id).state for job_id in ids} == {JobState.PAUSED}
    assert cli("resume", "--in-queue", "mail", "--state", "paused", "-y").exit_code == 0
    assert {rota.job(job_id).state for job_id in ids} == {JobState.PENDING}
    assert rota.paused_queues() == []


@pytest.mark.parametrize(
    "arguments",
    [
        ["retry", "7", "--state", "failed"],
        ["cancel", "7", "--tag", "x"],
        ["delete", "7", "--task", "t"],
        ["pause", "--queue", "mail", "--tag", "x"],
        ["resume", "--all", "--tag", "x"],
        ["retry"],
        ["delete"],
        ["jobs", "--since", "yesterday"],
        ["jobs", "--tag", "x", "--limit", "5000"],
        ["update", "7"],
        ["update", "7", "--delay", "5", "--run-at", "2030-01-01T00:00:00Z"],
        ["update", "7", "--meta", "[1]"],
    ],
)
def test_an_id_beside_a_filter_and_other_misuse_are_usage_errors(
    rota: Rota, cli: Cli, arguments: list[str]
) -> None:
    rota.jobs()
    result = cli(*arguments)
    assert result.exit_code == 2, result.output


def test_update_replay_and_delete_one_job(rota: Rota, failing: list[int], cli: Cli) -> None:
    later = rota.queue("later", delay=600)
    changed = cli(
        "update", str(later), "--priority", "-3", "--queue", "slow", "--tag", "a", "--tag", "b",
        "--meta", '{"by": "ana"}',
    )  # fmt: skip
    assert changed.exit_code == 0 and changed.stdout == f"job {later} updated\n"
    job = rota.job(later)
    assert (job.priority, job.queue, job.tags, job.meta) == (-3, "slow", ("a", "b"), {"by": "ana"})
    shown = cli("job", str(later))
    assert "tags" in shown.stdout and "a b" in shown.stdout and '"by": "ana"' in shown.stdout
    final = cli("update", str(failing[0]), "--priority", "1")
    assert final.exit_code == 1 and "only pending or paused" in final.stderr

    replayed = cli("replay", str(failing[0]))
    assert replayed.exit_code == 0, replayed.output
    new = int(replayed.stdout)
    assert rota.job(new).replay_of == failing[0] and rota.job(new).state is JobState.PENDING
    as_json = parsed(cli("job", str(new), "--json"))
    assert as_json["replay_of"] == failing[0] and as_json["tags"] == ["tenant:other"]
    assert as_json["stuck"] is False and "replay of" in cli("job", str(new)).stdout

    deleted = cli("delete", str(failing[0]))
    assert deleted.exit_code == 0 and deleted.stdout == f"job {failing[0]} (charge) deleted\n"
    assert cli("job", str(failing[0])).exit_code == 1
    assert "JOB_NOT_FOUND" in cli("delete", str(failing[0])).stderr


def test_new_commands_are_listed_with_their_filter_options() -> None:
    for command in ("retry", "cancel", "delete", "jobs"):
        shown = CliRunner().invoke(main, [command, "--help"])
        for option in ("--tag", "--since", "--args", "--error", "--finished-since"):
            assert option in shown.stdout, (command, option)
    assert "--in-queue" in CliRunner().invoke(main, ["pause", "--help"]).stdout
