"""Large results on MariaDB, whose ``max_allowed_packet`` (16 MiB on 10.11) bounds a statement.

Results are grouped into statements by their size as sent (UTF-8, escapes), below the limit
rota reads from the server; sixteen results of 1 MiB of 4-byte characters, each within the
default ``max_result_bytes``, used to make one UPDATE over 16 MiB, which the server refused for
ever while the jobs stayed ``running``.  Where rota is made to believe a larger limit, the
server really refuses (error 1153 just over it, a cut connection far over it): the batch is
halved until it passes, and a result the server refuses even alone fails its job with
``INVALID_RESULT`` while the others are written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from rota import JobContext, JobState, Rota
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import sql_store

MIB = 1024 * 1024
LARGE = "\U0001f600" * 262_142
"""1,048,570 bytes as JSON, within the default ``max_result_bytes`` of 1 MiB; sixteen of them
and a statement's SQL are just over MariaDB's 16 MiB."""


@pytest.fixture
def rota(mariadb: Database) -> Iterator[Rota]:
    made = Rota(
        mariadb.url,
        table_prefix=mariadb.prefix,
        clock=FakeClock(START),
        concurrency=32,
        max_result_bytes=32 * MIB,
    )

    @made.task(retries=3)
    def emit(ctx: JobContext, size: int) -> str:
        return "\U0001f600" * size if size else "small"

    yield made
    sql_store(made).engine.dispose()


def believe(rota: Rota, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """Make rota take ``limit`` for the server's statement limit, which it is not."""
    dialect = sql_store(rota).database.dialect
    monkeypatch.setattr(dialect, "statement_limit", lambda connection: limit)


def result_updates(rota: Rota) -> list[int]:
    """The number of results each UPDATE that writes results carries, as it is sent."""
    counts: list[int] = []

    def count(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        if statement.startswith("UPDATE") and "result=CASE" in statement:
            # A result a THEN; the unique key's own CASE (``rows.released_key``) aside.
            counts.append(statement.count(" THEN ") - statement.count("unique_for IS NULL"))

    event.listen(sql_store(rota).engine, "before_cursor_execute", count)
    return counts


def assert_all_reported(rota: Rota, ids: list[int], failed: tuple[int, ...] = ()) -> None:
    """Every job final, none ``running``, results intact; then later jobs are reported too."""
    for job_id in ids:
        job = rota.job(job_id)
        expected = JobState.FAILED if job_id in failed else JobState.SUCCEEDED
        assert job.state is expected, (job_id, job.state, job.errors)
        if expected is JobState.SUCCEEDED:
            assert job.result == LARGE
    later = [rota.queue("emit", 0) for _ in range(3)]
    assert rota.drain().succeeded == 3
    assert {rota.job(job_id).state for job_id in later} == {JobState.SUCCEEDED}


def test_results_filling_a_packet_are_written_in_statements_below_it(rota: Rota) -> None:
    ids = [rota.queue("emit", len(LARGE)) for _ in range(16)]
    updates = result_updates(rota)
    assert rota.drain().succeeded == 16
    assert updates == [15, 1], "16 MiB of results and their SQL do not fit in one packet"
    assert_all_reported(rota, ids)


@pytest.mark.parametrize(("jobs", "refusal"), [(16, "error 1153"), (24, "lost connection")])
def test_a_batch_the_server_refuses_is_halved_until_it_passes(
    rota: Rota,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    jobs: int,
    refusal: str,
) -> None:
    believe(rota, monkeypatch, 64 * MIB)
    ids = [rota.queue("emit", len(LARGE)) for _ in range(jobs)]
    updates = result_updates(rota)
    with caplog.at_level(logging.WARNING, logger="rota.worker"):
        assert rota.drain().succeeded == jobs
    split = [r for r in caplog.records if getattr(r, "event", None) == "worker.report_split"]
    assert split, f"the server refused the first batch ({refusal})"
    refused = [n for n in updates if n == jobs]  # a lost connection is repeated once
    assert 1 <= len(refused) <= 2 and sum(updates[len(refused) :]) == jobs, updates
    assert_all_reported(rota, ids)


@pytest.mark.parametrize(
    ("believed", "size"),
    [(None, 17 * MIB), (64 * MIB, 17 * MIB), (64 * MIB, 24 * MIB)],
    ids=["found-before-sending", "refused-1153", "connection-cut"],
)
def test_a_result_no_statement_can_carry_fails_its_job_alone(
    rota: Rota,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    believed: int | None,
    size: int,
) -> None:
    if believed is not None:
        believe(rota, monkeypatch, believed)
    ids = [rota.queue("emit", len(LARGE)) for _ in range(3)]
    huge = rota.queue("emit", size // 4)
    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        outcome = rota.drain()
    assert (outcome.succeeded, outcome.failed, outcome.retried) == (3, 1, 0)
    (error,) = rota.job(huge).errors
    assert (error.code, error.type) == ("INVALID_RESULT", "rota.errors.InvalidResult")
    assert f"({size + 2} bytes as JSON) could not be written" in error.message
    logged = [r for r in caplog.records if getattr(r, "event", None) == "worker.result_unwritable"]
    assert [getattr(r, "job_id", None) for r in logged] == [huge]
    assert_all_reported(rota, [*ids, huge], failed=(huge,))
