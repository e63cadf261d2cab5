"""Rows of workers dead for longer than ``Retention.workers`` are deleted, by the holder of the
prune lease only (a SIGKILLed worker never unregisters itself)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rota import Rota
from rota.core.model import WorkerInfo
from rota.runtime.retention import Retention, lease_pass
from tests.conftest import START

EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
LEASE = timedelta(minutes=2)


def row(worker_id: str, heartbeat_at: datetime) -> WorkerInfo:
    return WorkerInfo(
        id=worker_id,
        host="host",
        pid=1,
        queues=("default",),
        tasks=(),
        concurrency=1,
        started_at=heartbeat_at,
        heartbeat_at=heartbeat_at,
        heartbeat_seconds=10.0,
    )


def test_the_prune_lease_holder_deletes_rows_of_workers_dead_past_retention(rota: Rota) -> None:
    rota.jobs()  # migrates
    retention = Retention(workers=timedelta(hours=1))
    rota.store.cluster.register_worker(row("long-dead", START - timedelta(hours=1, seconds=1)))
    rota.store.cluster.register_worker(row("just-dead", START - timedelta(minutes=5)))
    rota.store.cluster.register_worker(row("live", START))
    assert rota.store.cluster.acquire_lease("prune", "other", START, START + LEASE)
    assert lease_pass(rota.store, "me", retention, START, LEASE) is None
    assert len(rota.store.cluster.workers(EPOCH)) == 3, "only the lease holder prunes"
    later = START + LEASE + timedelta(seconds=1)
    assert lease_pass(rota.store, "me", retention, later, LEASE) is not None
    kept = [w.id for w in rota.store.cluster.workers(EPOCH)]
    assert kept == ["just-dead", "live"], "dead within the retention: kept, listed as dead"
