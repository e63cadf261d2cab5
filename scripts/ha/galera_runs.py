"""The Galera topologies of issue 21, and the runs that compare single- and multi-writer.

``galera(writers)`` is the topology ``scripts/ha/run`` runs (the same shape as
``mariadb_replica.pair``): a fresh three-node cluster, and a ``fail`` that ``kill -9``s node 1
and waits until haproxy's endpoint reaches another node. Single writer: the producer and every
worker write through one endpoint (node 1, then 2, then 3). Multi-writer (``per-node``): worker
``i`` writes through the endpoint preferring node ``i mod 3 + 1``, so claims race on different
nodes, where ``SKIP LOCKED`` does not see the other nodes' locks: two nodes pick the same
pending jobs, and the loser's ``COMMIT`` fails certification (1213, the whole transaction
undone), which rota repeats. Whether a job then ran twice is what the marks tell. ``spread``
sends every new connection to the next node (haproxy's round robin), so even one worker's
claim, heartbeat and report may meet on different nodes.

``python scripts/ha/galera_runs.py`` runs both with the failure (and the single writer with its
node frozen, ``SIGSTOP``: a lost host, noticed by timeouts), then all three without it on a
backlog (the jobs queued within seconds) to compare throughput, and reads Galera's own conflict
counters around each run: ``wsrep_local_cert_failures`` (a local commit that lost
certification) and ``wsrep_local_bf_aborts`` (a local transaction aborted by a replicated
write set it conflicted with), per local commit.

Which topology to use: a single writer behind a proxy (haproxy's ``backup`` servers as here,
ProxySQL's single-writer hostgroup, MaxScale). Every node has each commit before it returns, so
a failover loses no acknowledged job, and all claims meet on one node, where ``SKIP LOCKED``
works. Multi-writer keeps jobs and ticks right (a claim that loses certification is undone
whole and rota repeats it) but pays in conflicts for no more throughput, and breaks what rests
on a lock alone, since a lock never leaves its node: concurrency limits (a key's row is locked,
not written) and the migration lock (``GET_LOCK`` is per node).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pymysql
from galera import GaleraCluster
from galera_node import DATABASE, PASSWORD, USER, WRITER_PORT
from outcome import Outcome, read_marks
from table import render
from workload import Settings, Topology, run

COUNTERS = ("wsrep_local_commits", "wsrep_local_cert_failures", "wsrep_local_bf_aborts")
FAILOVER_TIMEOUT = 60.0
BACKLOG_SECONDS = 10.0
BACKLOG_BATCH = 200
LOG_MARKS = ("Deadlock", "WSREP has not yet prepared", "Lost connection", "Traceback")
PROBE_TIMEOUT = 30.0
PROBE_TABLE = "CREATE TABLE galera_probe (id INT AUTO_INCREMENT PRIMARY KEY, at DOUBLE)"
PROBE_WRITE = "INSERT INTO galera_probe (at) VALUES (UNIX_TIMESTAMP(NOW(6)))"


def query(port: int, *statements: str) -> tuple[Any, ...] | None:
    """Run ``statements`` as rota's user through ``port`` (autocommit); the last one's first
    row, or ``None`` if the endpoint did not answer them all within ``PROBE_TIMEOUT``."""
    try:
        connection = pymysql.connect(
            host="127.0.0.1",
            port=port,
            user=USER,
            password=PASSWORD,
            database=DATABASE,
            connect_timeout=2,
            read_timeout=PROBE_TIMEOUT,
            write_timeout=PROBE_TIMEOUT,
            autocommit=True,
        )
    except pymysql.Error:
        return None
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return tuple(cursor.fetchone() or ())
    except pymysql.Error:
        return None
    finally:
        connection.close()


def failure(cluster: GaleraCluster, notes: dict[str, Any], freeze: bool) -> Callable[[], float]:
    """``kill -9`` node 1 (the writer), or freeze it (``SIGSTOP``, a lost host); wait until the
    writer endpoint answers from another node, then until a write commits there (the cluster
    stalls its commits until it has evicted the lost node); the failure's wall time."""

    def fail() -> float:
        failed = cluster.freeze(1) if freeze else cluster.kill(1)
        deadline = time.monotonic() + FAILOVER_TIMEOUT
        reached = None
        while reached is None or reached[0] == "galera-1":
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
            reached = query(WRITER_PORT, "SELECT @@wsrep_node_name")
        notes["writer_after_failure"] = reached[0] if reached else None
        notes["endpoint_seconds"] = round(time.time() - failed, 2)
        while query(WRITER_PORT, PROBE_WRITE, "SELECT 1") is None:
            if time.monotonic() > deadline:
                break
        notes["first_commit_seconds"] = round(time.time() - failed, 2)
        return failed

    return fail


@contextlib.contextmanager
def galera(writers: str, fail: bool = True, freeze: bool = False) -> Iterator[Topology]:
    """A fresh cluster as a ``Topology``; stopped and removed when left."""
    with cluster_topology(writers, fail, freeze) as (_, topology):
        yield topology


@contextlib.contextmanager
def cluster_topology(
    writers: str, fail: bool, freeze: bool = False
) -> Iterator[tuple[GaleraCluster, Topology]]:
    """``writers``: ``single`` (everything through the writer endpoint), ``per-node`` (worker
    ``i`` through the endpoint of node ``i mod 3 + 1``), ``spread`` (every connection of every
    process to the next node, round robin)."""
    with GaleraCluster() as cluster:
        notes: dict[str, Any] = {"nodes": len(cluster.nodes), "writers": writers}
        url = cluster.spread_url if writers == "spread" else cluster.writer_url
        workers = cluster.endpoint_urls if writers == "per-node" else []
        query(WRITER_PORT, PROBE_TABLE)
        fail_writer = failure(cluster, notes, freeze) if fail else None
        yield (
            cluster,
            Topology(f"Galera, {writers}", url, fail_writer, notes=notes, worker_urls=workers),
        )


def counters(cluster: GaleraCluster) -> dict[str, dict[str, int]]:
    """Galera's conflict counters of each live node."""
    found = {}
    for node in cluster.alive():
        status = cluster.status(node)
        found[node.name] = {name: int(status.get(name, 0)) for name in COUNTERS}
    return found


def throughput(outcome: Outcome) -> float | None:
    """Executions per second of ``record`` jobs, from the first mark to the last."""
    times = [m.at for m in read_marks(Path(outcome.details["directory"])) if m.kind == "job"]
    if len(times) < 2:
        return None
    return round(len(times) / (max(times) - min(times)), 1)


@dataclass(frozen=True)
class Scenario:
    label: str
    writers: str
    fail: bool
    freeze: bool = False


SCENARIOS = (
    Scenario("single writer, writer killed", writers="single", fail=True),
    Scenario("multi-writer, node 1 killed", writers="per-node", fail=True),
    Scenario("single writer, writer frozen", writers="single", fail=True, freeze=True),
    Scenario("single writer, backlog, no failure", writers="single", fail=False),
    Scenario("multi-writer, backlog, no failure", writers="per-node", fail=False),
    Scenario("round-robin, backlog, no failure", writers="spread", fail=False),
)


def measure(scenario: Scenario, settings: Settings) -> Outcome:
    """One scenario on a fresh cluster, with its throughput and the conflicts counted on the
    nodes that lived through it (a killed node's counters die with it). Without a failure the
    jobs are queued as a backlog within ``BACKLOG_SECONDS``: the workers' pace is measured, not
    the producer's."""
    if not scenario.fail:
        settings = replace(settings, produce_seconds=BACKLOG_SECONDS, batch=BACKLOG_BATCH)
    with cluster_topology(scenario.writers, scenario.fail, scenario.freeze) as (cluster, topology):
        before = counters(cluster)
        outcome = run(replace(topology, name=f"Galera, {scenario.label}"), settings)
        after = counters(cluster)
    delta = {
        name: sum(after[node][name] - before[node][name] for node in after) for name in COUNTERS
    }
    conflicts = delta["wsrep_local_cert_failures"] + delta["wsrep_local_bf_aborts"]
    attempts = delta["wsrep_local_commits"] + conflicts
    outcome.details.update(
        {
            "throughput_jobs_per_s": throughput(outcome),
            "galera_counters_on_survivors": delta,
            "conflict_rate": round(conflicts / attempts, 4) if attempts else None,
            "worker_log_lines": worker_log_lines(Path(outcome.details["directory"])),
        }
    )
    return outcome


def worker_log_lines(directory: Path) -> dict[str, int]:
    """How many lines of the workers' output name each error that matters on Galera: a
    conflict rota gave up repeating, a node not ready, a dropped connection, any traceback."""
    found = dict.fromkeys(LOG_MARKS, 0)
    for path in directory.glob("worker-*.log"):
        for line in path.read_text(errors="replace").splitlines():
            for mark in LOG_MARKS:
                found[mark] += mark in line
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=Settings().jobs)
    parser.add_argument(
        "--only", type=int, nargs="*", help=f"scenario numbers (1-{len(SCENARIOS)}) to run"
    )
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    options = parser.parse_args(argv)
    chosen = [SCENARIOS[i - 1] for i in options.only] if options.only else list(SCENARIOS)
    outcomes = []
    for scenario in chosen:
        outcomes.append(measure(scenario, Settings(jobs=options.jobs)))
        print(render(outcomes[-1:]), flush=True)
    print(render(outcomes))
    for outcome in outcomes:
        details = outcome.details
        print(
            f"{outcome.topology}: {details['throughput_jobs_per_s']} jobs/s, conflict rate "
            f"{details['conflict_rate']} ({details['galera_counters_on_survivors']})"
        )
    if options.json:
        options.json.write_text(json.dumps([o.as_dict() for o in outcomes], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
