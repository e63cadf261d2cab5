"""queue_many: ids in order, all or nothing, and right ids under concurrent bulk inserts."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from rota import Enqueue, JobContext, Rota
from rota.errors import InvalidArguments


def test_queue_many_returns_ids_in_order_and_runs_them(rota: Rota) -> None:
    seen: list[int] = []

    @rota.task
    def add(ctx: JobContext, n: int) -> None:
        seen.append(n)

    ids = rota.queue_many([Enqueue(add, n) for n in range(1_200)] + [Enqueue("add", n=-1)])
    assert len(ids) == 1_201
    assert [rota.job(ids[n]).args for n in (0, 999, 1000, 1199)] == [(0,), (999,), (1000,), (1199,)]
    assert rota.job(ids[-1]).kwargs == {"n": -1}
    assert rota.drain().succeeded == 1_201
    assert sorted(seen) == [-1, *range(1_200)]
    assert rota.queue_many([]) == []


def test_queue_many_is_all_or_nothing(rota: Rota) -> None:
    @rota.task
    def add(ctx: JobContext, n: object) -> None: ...

    with pytest.raises(InvalidArguments, match="positional argument 0"):
        rota.queue_many([Enqueue(add, 1), Enqueue(add, object()), Enqueue(add, 3)])
    assert rota.jobs() == []


def test_concurrent_bulk_inserts_get_their_own_ids(make_rota: Callable[..., Rota]) -> None:
    producers = [make_rota() for _ in range(4)]
    results: dict[int, list[int]] = {}

    def produce(index: int) -> None:
        requests = [Enqueue("tally", index, n) for n in range(1_500)]
        results[index] = producers[index].queue_many(requests)

    producers[0].jobs()
    threads = [threading.Thread(target=produce, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, ids in results.items():
        assert len(set(ids)) == 1_500
        sample = [producers[0].job(job_id).args for job_id in ids[::250]]
        assert sample == [(index, n) for n in range(0, 1_500, 250)]


def test_large_arguments_split_bulk_inserts_without_mixing_ids(rota: Rota) -> None:
    @rota.task
    def big(ctx: JobContext, n: int, blob: str) -> None: ...

    blob = "é" * 60_000
    ids = rota.queue_many([Enqueue(big, n, blob) for n in range(30)])
    assert [rota.job(job_id).args[0] for job_id in ids] == list(range(30))
