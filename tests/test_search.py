"""Tags, metadata and ``rota.find`` on every backend (DESIGN.md, "Tags, search and bulk
actions"): each filter narrows the jobs, the keyset cursor pages without overlap or gap, the
argument match is bounded, and bad input is ``INVALID_ARGUMENTS`` with nothing written."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from rota import Fail, Filter, InvalidArguments, JobContext, JobState, Rota
from rota.core.search import MAX_META_BYTES, MAX_TAGS, arguments_match
from rota.errors import ConfigError
from rota.testing import FakeClock

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def register(rota: Rota) -> None:
    @rota.task(retries=0, tags=["service:mail"])
    def send(ctx: JobContext, to: str, n: int = 0) -> None:
        if n < 0:
            raise Fail("refused")

    @rota.task(queue="reports")
    def report(ctx: JobContext, day: str) -> None: ...


def ids(rota: Rota, **fields: Any) -> list[int]:
    return [job.id for job in rota.find(limit=1000, **fields).jobs]


def test_tags_and_meta_are_kept_with_the_job(rota: Rota) -> None:
    register(rota)
    job_id = rota.queue("send", "a@x", tags=["tenant:acme", "urgent"], meta={"order": 1234})
    job = rota.job(job_id)
    assert set(job.tags) == {"service:mail", "tenant:acme", "urgent"}, "the task's tags too"
    assert job.meta == {"order": 1234}
    assert rota.job(rota.queue("report", "d")).tags == ()


def test_each_filter_narrows_the_jobs(rota: Rota, clock: FakeClock) -> None:
    register(rota)
    a = rota.queue("send", "a@x", tags=["tenant:acme"])
    b = rota.queue("send", "b@x", n=-1, tags=["tenant:acme", "urgent"])
    clock.advance(3600)
    c = rota.queue("report", "2026-01-01", tags=["tenant:zeta"])
    d = rota.queue("send", kwargs={"to": "d@x", "n": 2})
    rota.drain()
    assert ids(rota) == [d, c, b, a], "newest first"
    assert ids(rota, tags=["tenant:acme"]) == [b, a]
    assert ids(rota, tags=["tenant:acme", "urgent"]) == [b], "every tag named"
    assert ids(rota, tags=["service:mail"]) == [d, b, a]
    assert ids(rota, state="failed") == [b]
    assert ids(rota, state=["failed", "succeeded"]) == [d, c, b, a]
    assert ids(rota, task="report") == [c]
    assert ids(rota, queue="reports") == [c]
    assert ids(rota, error_code="FAILED_BY_HANDLER") == [b]
    start = clock.now() - timedelta(seconds=3600)
    assert ids(rota, created_after=start + timedelta(seconds=1)) == [d, c]
    assert ids(rota, created_before=start + timedelta(seconds=1)) == [b, a]
    assert ids(rota, finished_after=clock.now()) == [d, c, b, a]
    assert ids(rota, finished_before=clock.now()) == []
    assert ids(rota, args_match=("kwargs.n", 2)) == [d]
    assert ids(rota, args_match=("args[0]", "a@x")) == [a]
    assert ids(rota, args_match="2026-01") == [c]
    assert ids(rota, args_match=("kwargs.n", "2")) == [], "a value matches its JSON type"
    assert rota.count(tags=["tenant:acme"]) == 2
    assert rota.count(Filter(state="succeeded")) == 3
    assert rota.count(args_match="x") == 3


def test_the_cursor_pages_without_overlap_or_gap(rota: Rota) -> None:
    register(rota)
    queued = [rota.queue("send", f"{n}@x", tags=["t"]) for n in range(25)]
    seen: list[int] = []
    cursor = None
    while True:
        page = rota.find(tags=["t"], limit=7, cursor=cursor)
        seen += [job.id for job in page.jobs]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(queued, reverse=True)
    assert rota.find(tags=["t"], limit=25).next_cursor is None


def test_an_argument_match_reads_a_bounded_number_of_rows(rota: Rota) -> None:
    register(rota)
    for n in range(30):
        rota.queue("send", f"{n}@x")
    page = rota.find(args_match="7@x", limit=1)
    assert [job.args for job in page.jobs] == [("27@x",)]
    assert page.next_cursor is not None, "more rows may match below"
    rest = rota.find(args_match="7@x", limit=5, cursor=page.next_cursor)
    assert [job.args for job in rest.jobs] == [("17@x",), ("7@x",)]
    assert rest.next_cursor is None


def test_another_namespace_is_searched_only_when_named(make_rota: Any, rota: Rota) -> None:
    register(rota)
    billing = make_rota(namespace="billing")
    register(billing)
    mine = rota.queue("send", "a@x")
    theirs = billing.queue("send", "b@x")
    assert ids(rota) == [mine]
    assert ids(rota, namespace="billing") == [theirs]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tags": ["ok", " padded"]}, "whitespace"),
        ({"tags": "one"}, "a list of strings"),
        ({"tags": [f"t{n}" for n in range(MAX_TAGS + 1)]}, "at most 20 tags"),
        ({"meta": {"blob": "x" * MAX_META_BYTES}}, "over the 4096 limit"),
        ({"meta": ["not", "an", "object"]}, "a JSON object"),
        ({"meta": {"when": object()}}, "not JSON-serialisable"),
        ({"debounce": 30}, "give unique_key= too"),
        ({"unique_for": 60}, "give unique_key= too"),
        ({"unique_key": "k", "debounce": 0}, "1 s to a year"),
        ({"unique_key": "k", "debounce": 5, "delay": 3}, "one of delay, run_at and debounce"),
    ],
)
def test_bad_enqueue_options_are_refused_and_nothing_is_written(
    rota: Rota, fields: dict[str, Any], message: str
) -> None:
    register(rota)
    with pytest.raises(InvalidArguments, match=message):
        rota.queue("send", "a@x", **fields)
    assert rota.count() == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rota: rota.find(state="sleeping"), "no such job state"),
        (lambda rota: rota.find(error_code="timeout"), "upper case"),
        (lambda rota: rota.find(cursor="42"), "not a cursor"),
        (lambda rota: rota.find(limit=0), "limit is an int"),
        (lambda rota: rota.find(args_match=("kwargs..to", 1)), "not an argument path"),
        (lambda rota: rota.find(Filter(task="a"), task="b"), "not both"),
        (lambda rota: Filter(colour="red"), "no field 'colour'"),
    ],
)
def test_a_bad_search_is_invalid_arguments(rota: Rota, call: Any, message: str) -> None:
    with pytest.raises(InvalidArguments, match=message):
        call(rota)


def test_a_task_with_bad_default_tags_is_a_config_error(rota: Rota) -> None:
    with pytest.raises(ConfigError, match="tag"):

        @rota.task(tags=["bad\x00tag"])
        def tagged(ctx: JobContext) -> None: ...


def test_a_filter_round_trips_through_json() -> None:
    matching = Filter(state=["failed"], tags=["a", "b"], args_match=("kwargs.to", "x"))
    assert Filter.from_json(matching.to_json()) == matching
    assert Filter().empty and not matching.empty


def test_a_paused_queues_pending_job_is_found_paused(rota: Rota) -> None:
    register(rota)
    job_id = rota.queue("report", "d")
    rota.pause_queue("reports")
    (job,) = rota.find(task="report").jobs
    assert (job.id, job.state) == (job_id, JobState.PAUSED)


def test_argument_paths_reach_nested_values() -> None:
    from rota.core.model import Job

    job = Job(
        1,
        "t",
        "q",
        ("a", [1, {"k": True}]),
        {"o": {"l": [3]}},
        JobState.PENDING,
        0,
        1,
        0,
        NOW,
        NOW,
    )
    assert arguments_match(job, ("args[1][1].k", True))
    assert arguments_match(job, ("$.kwargs.o.l[0]", 3))
    assert not arguments_match(job, ("args[5]", "a"))
    assert not arguments_match(job, ("kwargs.o.l[0]", True)), "True is not 3 nor 1"


def test_a_cron_tasks_ticks_and_manual_runs_carry_its_tags(rota: Rota, clock: FakeClock) -> None:
    @rota.task(cron="*/5 * * * *", tags=["kind:report"])
    def nightly(ctx: JobContext) -> None: ...

    rota.drain()
    clock.advance(300)
    rota.drain()
    manual = rota.run_now("nightly")
    found = rota.find(tags=["kind:report"]).jobs
    assert len(found) >= 2 and manual in {job.id for job in found}
    assert {job.schedule for job in found} == {"nightly"}
    assert all(job.tags == ("kind:report",) for job in found)
