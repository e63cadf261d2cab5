"""``depends_on``: a job waits for every dependency to succeed, and is cancelled with
``DEPENDENCY_FAILED`` (transitively) when one fails or is cancelled."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from rota import Enqueue, InvalidArguments, JobContext, Rota
from rota.core.model import JobState
from rota.core.transitions import Transition
from rota.testing import FakeClock
from tests.conftest import Database
from tests.helpers import sql_store

CANCELLED = JobState.CANCELLED


def links(rota: Rota) -> int:
    table = sql_store(rota).schema.dependencies
    with sql_store(rota).engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def recorder(rota: Rota, fails: frozenset[str] = frozenset()) -> list[str]:
    order: list[str] = []

    @rota.task(retries=1, retry_delay=1)
    def step(ctx: JobContext, label: str) -> None:
        order.append(label)
        if label in fails:
            raise RuntimeError(f"{label} broke")

    return order


def diamond(rota: Rota, **a_options: Any) -> dict[str, int]:
    """a → b, c → d: b and c depend on a, d on both."""
    a = rota.queue("step", "a", **a_options)
    b = rota.queue("step", "b", depends_on=[a])
    c = rota.queue("step", "c", depends_on=(a,))
    d = rota.queue("step", "d", depends_on=[c, b])
    return {"a": a, "b": b, "c": c, "d": d}


def test_a_diamond_runs_in_dependency_order(rota: Rota) -> None:
    order = recorder(rota)
    # Lower priority runs first: without its dependencies d would run first.
    ids = {}
    ids["a"] = rota.queue("step", "a", priority=5)
    ids["b"] = rota.queue("step", "b", depends_on=[ids["a"]], priority=1)
    ids["c"] = rota.queue("step", "c", depends_on=[ids["a"]], priority=2)
    ids["d"] = rota.queue("step", "d", depends_on=[ids["c"], ids["b"]], priority=0)
    assert rota.drain().succeeded == 4
    assert order[0] == "a" and order[-1] == "d" and sorted(order[1:3]) == ["b", "c"]
    assert rota.job(ids["d"]).depends_on == tuple(sorted((ids["b"], ids["c"])))
    assert rota.job(ids["a"]).depends_on == ()
    assert rota.store.reads.dependents(ids["a"]) == [ids["b"], ids["c"]]


def test_a_dependent_waits_while_its_dependency_has_not_succeeded(rota: Rota) -> None:
    order = recorder(rota)
    first = rota.queue("step", "first", delay=60)
    then = rota.queue("step", "then", depends_on=[first])
    assert rota.drain().succeeded == 0
    assert rota.job(then).state is JobState.PENDING
    rota.pause(first)
    assert rota.drain().succeeded == 0
    assert order == []


def test_a_failed_dependency_cancels_its_dependents_transitively(
    rota: Rota, clock: FakeClock
) -> None:
    order = recorder(rota, fails=frozenset("a"))
    ids = diamond(rota)
    other = rota.queue("step", "other")
    rota.drain()
    clock.advance(60)
    result = rota.drain()
    assert result.failed == 1
    assert sorted(order) == ["a", "a", "other"]
    assert rota.job(ids["a"]).state is JobState.FAILED
    for name in "bcd":
        job = rota.job(ids[name])
        assert job.state is CANCELLED, name
        assert job.finished_at is not None
        assert [error.code for error in job.errors] == ["DEPENDENCY_FAILED"]
        assert job.errors[0].type == "DependencyFailed"
    assert f"job {ids['a']}," in rota.job(ids["b"]).errors[0].message
    assert "ended failed" in rota.job(ids["b"]).errors[0].message
    # d names the first of its dependencies that ended: b, cancelled in turn.
    assert f"job {ids['b']}, " in rota.job(ids["d"]).errors[0].message
    assert "ended cancelled" in rota.job(ids["d"]).errors[0].message
    assert rota.job(other).state is JobState.SUCCEEDED


def test_cancelling_a_pending_dependency_cancels_its_dependents(rota: Rota) -> None:
    order = recorder(rota)
    ids = diamond(rota, delay=60)
    unrelated = rota.queue("step", "unrelated", depends_on=[rota.queue("step", "root")])
    assert rota.cancel(ids["a"]) is True
    assert {rota.job(ids[name]).state for name in "bcd"} == {CANCELLED}
    assert rota.job(ids["c"]).errors[-1].code == "DEPENDENCY_FAILED"
    assert rota.drain().succeeded == 2
    assert order == ["root", "unrelated"]
    assert rota.job(unrelated).state is JobState.SUCCEEDED


def test_a_running_dependency_cancelled_by_its_worker_cancels_its_dependents(
    rota: Rota, clock: FakeClock
) -> None:
    recorder(rota)
    parent = rota.queue("step", "parent")
    child = rota.queue("step", "child", depends_on=[parent])
    now = clock.now()
    claimed = rota.store.jobs.claim(
        "w", ["default"], ["step"], 10, now, now + timedelta(seconds=30)
    )
    assert [job.id for job in claimed] == [parent], "the child waits"
    assert rota.cancel(parent) is True
    assert rota.job(child).state is JobState.PENDING, "asked, not yet cancelled"
    ended = Transition(parent, JobState.RUNNING, CANCELLED, 1, now)
    assert len(rota.store.jobs.complete("w", [ended], now)) == 1
    assert rota.job(child).state is CANCELLED
    assert rota.job(child).errors[-1].code == "DEPENDENCY_FAILED"


def test_a_late_worker_cancels_no_dependent(rota: Rota, clock: FakeClock) -> None:
    recorder(rota)
    parent = rota.queue("step", "parent")
    child = rota.queue("step", "child", depends_on=[parent])
    now = clock.now()
    rota.store.jobs.claim("w", ["default"], ["step"], 10, now, now + timedelta(seconds=30))
    late = Transition(parent, JobState.RUNNING, JobState.FAILED, 1, now)
    assert len(rota.store.jobs.complete("someone-else", [late], now)) == 0
    assert rota.job(child).state is JobState.PENDING


def test_a_dependent_of_a_succeeded_job_runs(rota: Rota) -> None:
    order = recorder(rota)
    done = rota.queue("step", "done")
    rota.drain()
    later = rota.queue("step", "later", depends_on=[done, done])
    assert rota.job(later).depends_on == (done,)
    assert rota.drain().succeeded == 1
    assert order == ["done", "later"]


def test_a_dependent_of_a_job_that_already_failed_is_created_cancelled(rota: Rota) -> None:
    recorder(rota)
    gone = rota.queue("step", "gone", delay=60)
    rota.cancel(gone)
    late = rota.queue("step", "late", depends_on=[gone], unique_key="late")
    job = rota.job(late)
    assert job.state is CANCELLED
    assert job.unique_key is None
    assert job.depends_on == (gone,)
    assert job.errors[0].code == "DEPENDENCY_FAILED"
    assert "had already ended cancelled" in job.errors[0].message
    assert rota.drain().succeeded == 0


def test_unknown_dependencies_are_invalid_and_nothing_is_written(rota: Rota) -> None:
    recorder(rota)
    real = rota.queue("step", "real")
    with pytest.raises(InvalidArguments, match=r"do not exist: 999999, 1000000"):
        rota.queue_many(
            [
                Enqueue("step", "fine", depends_on=[real]),
                Enqueue("step", "bad", depends_on=[real, 1_000_000, 999_999]),
            ]
        )
    assert [job.id for job in rota.store.reads.jobs()] == [real]
    assert links(rota) == 0


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(5, id="not-a-list"),
        pytest.param("12", id="string"),
        pytest.param({1}, id="set"),
        pytest.param([True], id="bool"),
        pytest.param([0], id="zero"),
        pytest.param([-3], id="negative"),
        pytest.param([2**63], id="too-large"),
        pytest.param([1.0], id="float"),
        pytest.param(list(range(1, 1_002)), id="too-many"),
    ],
)
def test_depends_on_must_be_a_short_list_of_job_ids(rota: Rota, given: object) -> None:
    recorder(rota)
    with pytest.raises(InvalidArguments, match=r"depends on|depends_on"):
        rota.queue("step", "x", depends_on=given)
    assert rota.jobs() == []


def test_queue_many_takes_dependencies_per_request(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(concurrency=1)
    order = recorder(rota)
    first, second = rota.queue_many([Enqueue("step", "1"), Enqueue("step", "2")])
    ids = rota.queue_many(
        [
            Enqueue("step", "both", depends_on=[second, first], priority=-5),
            Enqueue("step", "free", priority=-1),
            Enqueue("step", "one", depends_on=[first], priority=-3),
        ]
    )
    assert [rota.job(i).depends_on for i in ids] == [(first, second), (), (first,)]
    assert rota.drain().succeeded == 5
    # One at a time: lowest priority first among the jobs whose dependencies succeeded.
    assert order[:2] == ["free", "1"]
    assert order.index("both") > order.index("2") and order.index("one") > order.index("1")


def test_a_live_duplicate_keeps_its_own_dependencies(rota: Rota) -> None:
    recorder(rota)
    first, second = rota.queue("step", "1", delay=60), rota.queue("step", "2", delay=60)
    kept = rota.queue("step", "x", unique_key="k", depends_on=[first])
    assert rota.queue("step", "x", unique_key="k", depends_on=[second]) == kept
    assert rota.job(kept).depends_on == (first,)
    assert links(rota) == 1


def test_dependencies_follow_the_callers_transaction(rota: Rota, db: Database) -> None:
    order = recorder(rota)
    parent = rota.queue("step", "parent")
    engine = db.engine()
    try:

        def rolled_back() -> None:
            with engine.begin() as connection:
                rota.queue("step", "dropped", depends_on=[parent], connection=connection)
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            rolled_back()
        assert links(rota) == 0
        with engine.begin() as connection:
            kept = rota.queue("step", "kept", depends_on=[parent], connection=connection)
    finally:
        engine.dispose()
    assert rota.job(kept).depends_on == (parent,)
    assert rota.drain().succeeded == 2
    assert order == ["parent", "kept"]


def test_retrying_a_failed_dependency_leaves_its_cancelled_dependents(
    rota: Rota, clock: FakeClock
) -> None:
    order = recorder(rota, fails=frozenset("a"))
    ids = diamond(rota)
    rota.drain()
    clock.advance(60)
    rota.drain()
    assert rota.retry(ids["a"]) is True
    assert rota.job(ids["b"]).state is CANCELLED
    # A retried dependent waits for its dependencies again, and is cancelled again if one
    # ends badly, its errors kept.
    assert rota.retry(ids["b"]) is True
    rota.drain()
    clock.advance(60)
    rota.drain()
    errors = rota.job(ids["b"]).errors
    assert rota.job(ids["b"]).state is CANCELLED
    assert [error.code for error in errors] == ["DEPENDENCY_FAILED", "DEPENDENCY_FAILED"]
    assert "b" not in order


def test_pruning_deletes_links_and_a_pruned_dependency_does_not_block(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()
    order = recorder(rota)
    parent = rota.queue("step", "parent")
    child = rota.queue("step", "child", depends_on=[parent], delay=timedelta(days=9))
    rota.drain()
    clock.advance(timedelta(days=8))
    assert rota.prune() == 1
    assert links(rota) == 1, "the child still shows its (pruned) dependency"
    clock.advance(timedelta(days=1))
    assert rota.drain().succeeded == 1
    assert order == ["parent", "child"]
    assert rota.job(child).depends_on == (parent,)
    clock.advance(timedelta(days=8))
    assert rota.prune() == 1
    assert links(rota) == 0
