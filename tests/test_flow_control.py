"""Concurrency and rate limits per key (issue 16, items 4 and 5), on every backend via drain
and the store's claim: the limits hold in the claim transaction, and blocked keys never block
the others."""

from __future__ import annotations

import asyncio
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from rota import ConfigError, InvalidArguments, JobContext, JobState, Rota, TaskDefinition
from rota.core.limits import KEY_LENGTH, Candidate, FlowLimits, Rate, admit, parse_rate, stored_key
from rota.runtime.retention import Retention, lease_pass
from rota.testing import FakeClock
from tests.conftest import START
from tests.helpers import sql_store

LEASE = timedelta(seconds=30)


def claim_ids(
    rota: Rota, worker: str, limit: int, now: datetime, queues: tuple[str, ...] = ("default",)
) -> list[int]:
    """One claim as a worker of ``rota``'s tasks makes it, with their limits."""
    tasks = [task.name for task in rota.registry]
    limits = {task.name: task.limits for task in rota.registry if task.limits}
    jobs = rota.store.jobs.claim(worker, list(queues), tasks, limit, now, now + LEASE, limits)
    return [job.id for job in jobs]


def test_limit_one_per_key_never_overlaps(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(concurrency=10)
    active: Counter[str] = Counter()
    most: Counter[str] = Counter()
    together: list[int] = []

    @rota.task(concurrency_limit=1, concurrency_key="account:{account}", retries=0)
    async def sync_account(ctx: JobContext, account: int) -> None:
        active[str(account)] += 1
        most[str(account)] = max(most[str(account)], active[str(account)])
        together.append(sum(active.values()))
        await asyncio.sleep(0.005)
        active[str(account)] -= 1

    ids = [rota.queue(sync_account, i % 3) for i in range(24)]
    assert rota.job(ids[0]).concurrency_key == "sync_account:account:0"
    assert rota.drain().succeeded == 24
    assert set(most.values()) == {1}
    assert max(together) > 1, "different keys should run side by side"


def test_hot_key_does_not_block_cold_keys(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=1, concurrency_key="{key}")
    def work(ctx: JobContext, key: str) -> None: ...

    hot = [rota.queue(work, "hot") for _ in range(60)]
    cold = [rota.queue(work, f"cold-{i}") for i in range(25)]
    now = clock.now()
    first = claim_ids(rota, "w1", 10, now)
    assert first[0] == hot[0] and set(first[1:]) == set(cold[:9])
    # The hot key is full: another worker's claim skips its 59 waiting jobs entirely.
    second = claim_ids(rota, "w2", 10, now)
    assert set(second) == set(cold[9:19])
    third = claim_ids(rota, "w3", 10, now)
    assert set(third) == set(cold[19:])
    assert {rota.job(i).state for i in hot[1:]} == {JobState.PENDING}


def test_a_hot_key_ahead_in_every_queue_does_not_block_a_pool_of_queues(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    """Each queue's best rows are read with the keys known full left out, so the jobs of a
    held key at the head of every queue do not hide those behind them."""
    rota = make_rota()

    @rota.task(concurrency_limit=1, concurrency_key="{key}")
    def work(ctx: JobContext, key: str) -> None: ...

    queues = ("a", "b", "c")
    hot = [rota.queue(work, "hot", queue=queue) for _ in range(30) for queue in queues]
    cold = [rota.queue(work, f"cold-{i}", queue=queues[i % 3]) for i in range(12)]
    now = clock.now()
    first = claim_ids(rota, "w1", 5, now, queues)
    assert first[0] == hot[0] and set(first[1:]) <= set(cold) and len(first) == 5
    second = claim_ids(rota, "w2", 10, now, queues)
    assert set(second) == set(cold) - set(first)
    assert claim_ids(rota, "w3", 10, now, queues) == []


def test_a_dead_workers_slot_frees_when_its_lease_expires(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=2)
    def export(ctx: JobContext) -> None: ...

    ids = [rota.queue(export) for _ in range(5)]
    now = clock.now()
    assert claim_ids(rota, "w1", 5, now) == ids[:2]
    assert claim_ids(rota, "w2", 5, now + LEASE) == []  # lease_until >= now: still held
    later = now + LEASE + timedelta(seconds=1)
    assert claim_ids(rota, "w2", 5, later) == ids[2:4]  # w1 stopped renewing: its slots free


def test_limited_and_unlimited_tasks_share_a_worker(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=1, priority=-1)
    def single(ctx: JobContext) -> None: ...

    @rota.task
    def plain(ctx: JobContext) -> None: ...

    singles = [rota.queue(single) for _ in range(5)]
    plains = [rota.queue(plain) for _ in range(5)]
    assert claim_ids(rota, "w1", 4, clock.now()) == [singles[0], *plains[:3]]


def test_rate_limit_across_two_instances(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    """Two instances on one database drain in turns while a fake clock moves 7 s at a time:
    no tenant ever gets more than 5 starts in a minute, and each gets its 5 every minute."""
    starts: dict[tuple[str, datetime], int] = defaultdict(int)
    instances = [make_rota(concurrency=4) for _ in range(2)]
    for rota in instances:

        @rota.task(name="call_api", rate_limit="5/m", rate_key="tenant:{tenant}")
        def call_api(ctx: JobContext, tenant: str) -> None:
            minute = clock.now().replace(second=0, microsecond=0)
            starts[(tenant, minute)] += 1

    for i in range(40):
        instances[i % 2].queue("call_api", "a" if i % 4 < 2 else "b")
    for step in range(4 * 60 // 7):
        instances[step % 2].drain()
        instances[(step + 1) % 2].drain()
        clock.advance(7)
    assert max(starts.values()) == 5
    minutes = sorted({minute for _, minute in starts})
    assert len(minutes) == 4
    assert all(starts[(tenant, m)] == 5 for tenant in "ab" for m in minutes)


def test_per_second_rate_and_concurrency_together(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=5, rate_limit="3/s", rate_key="x")
    def both(ctx: JobContext) -> None: ...

    [rota.queue(both) for _ in range(10)]
    now = clock.now().replace(microsecond=0)
    half = timedelta(seconds=0.5)
    assert len(claim_ids(rota, "w1", 10, now)) == 3  # the rate
    assert len(claim_ids(rota, "w2", 10, now + half)) == 0  # the same second
    assert len(claim_ids(rota, "w2", 10, now + 2 * half)) == 2  # 3 running of 5
    assert len(claim_ids(rota, "w3", 10, now + 3 * half)) == 0  # full, one token left
    assert rota.job(1).rate_key == "both:x"


def test_jobs_queued_by_name_get_their_keys_from_the_worker(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    """A process without the definition writes no keys; the claiming worker resolves them."""
    producer = make_rota()
    ids = [producer.queue("sync", account=7) for _ in range(3)]
    ids.append(producer.queue("sync", account=8))
    assert producer.job(ids[0]).concurrency_key is None
    worker = make_rota()

    @worker.task(concurrency_limit=1, concurrency_key="acct:{account}")
    def sync(ctx: JobContext, account: int) -> None: ...

    assert claim_ids(worker, "w1", 10, clock.now()) == [ids[0], ids[3]]
    assert [worker.job(i).concurrency_key for i in ids] == ["sync:acct:7"] * 3 + ["sync:acct:8"]


def test_keys_resolve_from_templates_defaults_and_callables(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=1, concurrency_key="{region}/{account}", rate_limit="10/h")
    def templated(ctx: JobContext, account: int, region: str = "eu") -> None: ...

    @rota.task(concurrency_limit=3, concurrency_key=lambda user, **_: f"user:{user['id']}")
    def called(ctx: JobContext, user: dict[str, int], **options: str) -> None: ...

    job = rota.job(rota.queue(templated, 5))
    assert (job.concurrency_key, job.rate_key) == ("templated:eu/5", "templated")
    assert rota.job(rota.queue(called, {"id": 9}, mode="x")).concurrency_key == "called:user:9"
    long = rota.job(rota.queue(templated, 1, region="r" * 400)).concurrency_key
    assert long is not None and len(long) <= KEY_LENGTH and long.startswith("templated:rrr")


def test_a_key_that_cannot_be_resolved_is_refused_at_enqueue(
    make_rota: Callable[..., Rota],
) -> None:
    rota = make_rota()

    def broken(account: int) -> str:
        raise LookupError("no such account")

    @rota.task(concurrency_limit=1, concurrency_key=broken)
    def a(ctx: JobContext, account: int) -> None: ...

    @rota.task(concurrency_limit=1, concurrency_key=lambda account: account)
    def b(ctx: JobContext, account: int) -> None: ...

    @rota.task(concurrency_limit=1, concurrency_key="{account[name]}")
    def c(ctx: JobContext, account: object) -> None: ...

    with pytest.raises(InvalidArguments, match="LookupError: no such account"):
        rota.queue(a, 1)
    with pytest.raises(InvalidArguments, match="non-empty string"):
        rota.queue(b, 1)
    with pytest.raises(InvalidArguments, match="cannot fill its key"):
        rota.queue(c, 1)
    assert rota.counts().by_state.get(JobState.PENDING, 0) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency_limit": 0}, "concurrency_limit must be an int of at least 1"),
        ({"concurrency_limit": True}, "concurrency_limit must be an int"),
        ({"concurrency_limit": "2"}, "concurrency_limit must be an int"),
        ({"concurrency_key": "{account}"}, "concurrency_key needs a concurrency_limit"),
        ({"rate_key": "{account}"}, "rate_key needs a rate_limit"),
        ({"concurrency_limit": 1, "concurrency_key": "{acount}"}, "'acount', which is not"),
        ({"concurrency_limit": 1, "concurrency_key": "{}"}, "must name its fields"),
        ({"concurrency_limit": 1, "concurrency_key": "{0}"}, "must name its fields"),
        ({"concurrency_limit": 1, "concurrency_key": "{ctx}"}, "'ctx', which is not"),
        ({"concurrency_limit": 1, "concurrency_key": "{account"}, "not a valid template"),
        ({"concurrency_limit": 1, "concurrency_key": 5}, "a str.format template or a callable"),
        ({"rate_limit": "100/d"}, "rate_limit must be '<count>/<s|m|h>'"),
        ({"rate_limit": "0/m"}, "positive whole count"),
        ({"rate_limit": "1.5/s"}, "e.g. '100/m'"),
        ({"rate_limit": 100}, "got 100"),
        ({"rate_limit": "10/m", "rate_key": "{nope}"}, "'nope', which is not"),
    ],
)
def test_invalid_limit_options_fail_at_definition(options: dict[str, Any], message: str) -> None:
    def handler(ctx: JobContext, account: int) -> None: ...

    with pytest.raises(ConfigError, match=re.escape(message)):
        TaskDefinition(name="t", handler=handler, **options)


def test_rate_windows_are_epoch_aligned() -> None:
    rate = parse_rate("100/m", "task 't':")
    assert rate == Rate(100, 60)
    at = START + timedelta(seconds=75.5)
    assert rate.window(at) == START + timedelta(seconds=60)
    assert rate.available(None, None, at) == 100
    assert rate.available(3.0, START + timedelta(seconds=60), at) == 3
    assert rate.available(0.0, START, at) == 100  # the window it was used up in is over
    assert Rate(10, 1).available(50.0, at.replace(microsecond=0), at) == 10  # lowered limit


def test_admit_takes_slots_and_tokens_in_order() -> None:
    flows = {"t": FlowLimits("t", concurrency=2, rate=Rate(5, 1))}
    found = [Candidate(i, "t", "k1" if i < 3 else "k2", "r") for i in range(6)]
    free = {"k1": 2, "k2": 1}
    tokens = {"r": 2}
    assert admit(found, flows, free, tokens) == [0, 1]
    assert admit([Candidate(9, "t", "k3", "r")], flows, {}, {"r": 1}) == []  # k3 held elsewhere
    assert admit([Candidate(9, "other", "k3", None)], flows, {}, {}) == [9]


def test_stored_keys_stay_exact_on_every_backend() -> None:
    assert stored_key("t:acct:1") == "t:acct:1"
    for key in ("t:" + "x" * 300, "t:tail ", "t:nul\x00", "t:\ud800"):
        stored = stored_key(key)
        assert len(stored) <= KEY_LENGTH and "#" in stored
        assert stored != stored_key(key + "y")


def test_old_key_rows_are_pruned_and_made_again_when_needed(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(concurrency_limit=1, concurrency_key="account:{account}", rate_limit="10/m")
    def sync(ctx: JobContext, account: int) -> None: ...

    def keys() -> set[str]:
        table = sql_store(rota).schema.limits
        with sql_store(rota).engine.connect() as connection:
            return set(connection.execute(select(table.c.key)).scalars())

    rota.queue(sync, 1)
    rota.queue(sync, 2)
    assert rota.drain().succeeded == 2
    made = keys()
    assert len(made) == 3, "two accounts' concurrency keys and the task's rate key"
    retention, lease = Retention(), timedelta(minutes=2)
    clock.advance(retention.limits - timedelta(minutes=1))
    assert lease_pass(rota.store, "me", retention, clock.now(), lease) is not None
    assert keys() == made, "written within the retention: kept"
    clock.advance(timedelta(minutes=2))
    lease_pass(rota.store, "me", retention, clock.now(), lease)
    assert keys() == set()
    rota.queue(sync, 1)
    assert rota.drain().succeeded == 1
    assert len(keys()) == 2, "made again by the next claim of the key"
