"""What processes sharing the database tell each other through the protocol: workers, named
leases, stranded jobs; and the database itself: connect, migrate, schema status, server time."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from rota.errors import StoreError
from rota.store import Store, head_revision, open_store
from tests.conftest import START, Database
from tests.store.contract.support import claim, new, worker

MINUTE = timedelta(minutes=1)
PRODUCTS = {"sqlite": {"SQLite"}, "mariadb": {"MariaDB", "MySQL"}, "postgres": {"PostgreSQL"}}


def test_workers_are_listed_while_their_heartbeat_is_recent(store: Store) -> None:
    store.cluster.register_worker(worker("b", START - 5 * MINUTE))
    store.cluster.register_worker(worker("a", START, tasks={"t": "default", "mail": "mail"}))
    assert [w.id for w in store.cluster.workers(START - 10 * MINUTE)] == ["a", "b"]
    (live,) = store.cluster.workers(START - MINUTE)
    assert (live.id, live.tasks, live.task_queues["mail"]) == ("a", ("t", "mail"), "mail")
    store.jobs.heartbeat("b", [], START, START + MINUTE)
    assert [w.id for w in store.cluster.workers(START - MINUTE)] == ["a", "b"], (
        "a heartbeat renews it"
    )
    store.cluster.register_worker(worker("a", START, queues=("mail",)))
    assert [w.queues for w in store.cluster.workers(START) if w.id == "a"] == [("mail",)], (
        "replaced"
    )
    store.cluster.unregister_worker("a")
    assert [w.id for w in store.cluster.workers(START - MINUTE)] == ["b"]


def test_a_worker_is_live_until_it_misses_two_of_its_own_heartbeats(store: Store) -> None:
    second = timedelta(seconds=1)
    store.cluster.register_worker(worker("fast", START, heartbeat_seconds=1.0))
    store.cluster.register_worker(worker("slow", START, heartbeat_seconds=20.0))
    store.cluster.register_worker(worker("old", START))  # a row of an older rota: the fixed window
    assert [w.heartbeat_seconds for w in store.cluster.workers(START)] == [1.0, None, 20.0]
    assert [w.id for w in store.cluster.workers(START + 2 * second)] == ["fast", "old", "slow"]
    assert [w.id for w in store.cluster.workers(START + 3 * second)] == ["old", "slow"]
    assert [w.id for w in store.cluster.workers(START + 41 * second)] == ["old"]
    assert store.cluster.workers(START + 2 * MINUTE + second) == []
    store.jobs.heartbeat("fast", [], START + 10 * second, START + MINUTE)
    assert [w.id for w in store.cluster.workers(START + 11 * second)] == ["fast", "old", "slow"]


def test_rows_of_long_dead_workers_are_pruned(store: Store) -> None:
    store.cluster.register_worker(worker("dead", START - 2 * MINUTE))
    store.cluster.register_worker(worker("live", START))
    assert store.cluster.prune_workers(START - MINUTE) == 1
    assert [w.id for w in store.cluster.workers(START - 10 * MINUTE)] == ["live"]
    assert store.cluster.prune_workers(START - MINUTE) == 0


def test_a_lease_is_held_by_one_owner_until_it_expires(store: Store) -> None:
    assert store.cluster.acquire_lease("prune", "p1", START, START + MINUTE) is True
    assert store.cluster.acquire_lease("prune", "p2", START, START + MINUTE) is False
    assert store.cluster.acquire_lease("prune", "p1", START, START + 2 * MINUTE) is True, "renewed"
    assert store.cluster.acquire_lease("prune", "p2", START + MINUTE, START + 2 * MINUTE) is False
    later = START + 2 * MINUTE + timedelta(seconds=1)
    assert store.cluster.acquire_lease("prune", "p2", later, later + MINUTE) is True, "expired"
    assert store.cluster.acquire_lease("other", "p1", later, later + MINUTE) is True


def test_stranded_jobs_are_counted_by_task_and_queue_with_the_reason(store: Store) -> None:
    store.jobs.enqueue(
        [new("ghost"), new("ghost"), new("t", queue="mail"), new("t"), new("ghost", queue="b")],
        START,
    )
    store.cluster.register_worker(worker("gone", START - 10 * MINUTE, tasks={"ghost": "default"}))
    store.cluster.register_worker(worker("w1", START))
    stranded = store.reads.stranded(START - MINUTE)
    assert [(s.task, s.queue, s.pending, s.reason) for s in stranded] == [
        ("ghost", "b", 1, "no live worker registers the task"),
        ("ghost", "default", 2, "no live worker registers the task"),
        ("t", "mail", 1, "no live worker with the task serves the queue"),
    ]
    claim(store, tasks=("t",), queues=("mail",))
    assert [s.queue for s in store.reads.stranded(START - MINUTE) if s.task == "t"] == [], (
        "pending only"
    )


def test_connect_describes_a_server_rota_can_run_on(store: Store, db: Database) -> None:
    server = store.connect()
    assert server.problem is None
    assert server.product in PRODUCTS[db.backend]
    assert server.skip_locked == ("single writer" if db.backend == "sqlite" else "yes")
    assert str(server).startswith(server.product) and server.version[0].isdigit()
    assert store.server_info() == server
    name, version = store.driver()
    assert name and version


def test_migrate_is_idempotent_and_the_status_says_up_to_date(store: Store) -> None:
    assert store.migrate() == []
    status = store.schema_status()
    assert (status.revision, status.head, status.state, status.problem) == (
        head_revision(),
        head_revision(),
        "up to date",
        None,
    )
    store.require_schema()


def test_a_missing_schema_is_named_and_migrate_creates_it(db: Database) -> None:
    fresh = open_store(db.url, f"{db.prefix}new_")
    try:
        status = fresh.schema_status()
        assert (status.revision, status.state) == (None, "missing")
        assert status.problem is not None and "run `rota migrate`" in status.problem
        with pytest.raises(StoreError, match="run `rota migrate`"):
            fresh.require_schema()
        applied = fresh.migrate()
        assert applied and applied[-1] == head_revision()
        assert fresh.schema_status().state == "up to date"
    finally:
        fresh.dispose()


def test_dispose_closes_connections_and_the_next_call_opens_new_ones(store: Store) -> None:
    store.jobs.enqueue([new()], START)
    store.dispose()
    assert store.finished.counts(START).total == 1


def test_server_clock_is_the_servers_clock_in_utc_read_within_one_round_trip(
    store: Store, db: Database
) -> None:
    sent = time.monotonic()
    reading = store.server_clock()
    received = time.monotonic()
    if db.backend == "sqlite":
        assert reading is None, "SQLite runs on this host's clock"
        return
    assert reading is not None and reading.remote.tzinfo is not None
    assert abs(reading.remote - datetime.now(timezone.utc)) < MINUTE
    assert sent <= reading.sent <= reading.received <= received
