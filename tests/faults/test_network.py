"""Workers on test hosts of their own, across a network that fails (issue 14, acceptance 4).

Each worker host is a network namespace joined by veth (tests/faults/network.py); it reaches
MariaDB (127.0.0.1 only) through the test's own proxy bound to the veth's address, which also
adds latency, cuts connections and blackholes one. Partitions are iptables DROP rules.

* (a) A worker host cut off, packets dropped both ways, for three leases while it runs jobs:
  another worker (on this host) re-runs them; when the link returns the cut-off worker writes
  nothing for them and stops their handlers; only what it held ran twice.
* (b) 50 ms added to every answer and 1 % of requests cutting their connection (RST), for
  2,000 jobs on two workers: every job succeeds.
* (c) One connection blackholed mid-query: the worker notices within ``read_timeout`` (answers
  held by a proxy whose kernel still acknowledges) or within ``keepalive`` (the connection's
  packets dropped too), and goes on working; on MariaDB through PyMySQL and through
  mysqlclient, whose timeouts are whole seconds (rounded up) and whose socket rota reaches
  through its descriptor.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from rota import Enqueue, JobState, Rota
from rota.core.model import Job
from tests.conftest import Database
from tests.faults.conftest import EVERY_SERVER, on_driver
from tests.faults.network import leftovers, netem_available, proxy, worker_host
from tests.helpers import sql_store, wait_until
from tests.workers import GRACE, LEASE, Workers

pytestmark = pytest.mark.slow

APP = "tests.apps.network_app:app"
LOST = "lost a database connection"


@dataclass(frozen=True)
class Mark:
    job: int
    attempt: int
    pid: int
    event: str
    at: float


def marks(directory: Path) -> list[Mark]:
    found = []
    for path in directory.glob("runs.*"):
        for line in path.read_text().splitlines():
            job, attempt, pid, event, at = line.split()
            found.append(Mark(int(job), int(attempt), int(pid), event, float(at)))
    return found


def events(directory: Path, pid: int, event: str) -> dict[int, Mark]:
    return {m.job: m for m in marks(directory) if m.pid == pid and m.event == event}


@contextlib.contextmanager
def deployment(
    db: Database, tmp_path: Path, env: Mapping[str, str]
) -> Iterator[tuple[Rota, Workers]]:
    control = Rota(db.url, table_prefix=db.prefix, connect_timeout=10)
    control.jobs()
    workers = Workers(db, control, tmp_path, app=APP, env=env)
    try:
        yield control, workers
    finally:
        workers.stop_all()
        sql_store(control).engine.dispose()


def settled(control: Rota, ids: list[int]) -> Callable[[], bool]:
    def check() -> bool:
        by_state = control.counts().by_queue.get("default", {})
        return by_state.get(JobState.SUCCEEDED.value, 0) >= len(ids)

    return check


def hold(control: Rota, seconds: float, count: int) -> list[int]:
    return control.queue_many([Enqueue("hold", seconds) for _ in range(count)])


def jobs(control: Rota, ids: list[int]) -> dict[int, Job]:
    return {job.id: job for job in control.store.reads.jobs(limit=None) if job.id in set(ids)}


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert leftovers() == [], "a namespace or link of this run outlived its test"


def test_the_kernel_has_no_netem_hence_the_proxy() -> None:
    """Documents why latency and loss come from tests/faults/network.py's proxy."""
    with worker_host(9):
        pass
    if netem_available():
        pytest.skip("this kernel has netem; the proxy is used all the same")


def test_a_partitioned_worker_writes_nothing_for_jobs_rerun_elsewhere(
    mariadb: Database, tmp_path: Path
) -> None:
    real = make_url(mariadb.url)
    env = {
        "ROTA_TEST_CONCURRENCY": "10",
        "ROTA_TEST_READ_TIMEOUT": "2",
        "ROTA_TEST_KEEPALIVE": "4",
    }
    with (
        worker_host(1) as host,
        proxy((host.gateway, 0), (real.host or "127.0.0.1", real.port or 3306)) as forwarder,
        deployment(mariadb, tmp_path, env) as (control, workers),
    ):
        url = real.set(host=host.gateway, port=forwarder.port).render_as_string(False)
        cut = workers.start(url, command=host.python("worker", APP, "--grace", str(GRACE)))
        long = hold(control, 12.0, 5)
        short = hold(control, 3.0, 5)
        ids = long + short
        workers.wait(lambda: len(events(workers.marks, cut.pid, "start")) == 10, cut, timeout=20)

        with host.partitioned():
            partitioned_at = time.monotonic()
            # Started once the link is cut: a start slower than the short jobs (a loaded
            # machine) would otherwise let the cut-off worker report them before the cut.
            other = workers.start()  # on this host, straight to the server
            workers.wait(  # leases expire in LEASE; a loaded CI machine may take longer
                lambda: len(events(workers.marks, other.pid, "start")) == 10,
                cut,
                other,
                timeout=40,
            )
            rescued_after = time.monotonic() - partitioned_at
            time.sleep(max(0.0, 3 * LEASE - (time.monotonic() - partitioned_at)))
            partition = time.monotonic() - partitioned_at

        healed_at = time.monotonic()
        workers.wait(
            lambda: set(events(workers.marks, cut.pid, "stop")) == set(long),
            cut,
            other,
            timeout=20,
        )
        stopped_after = time.monotonic() - healed_at
        workers.wait(settled(control, ids), cut, other, timeout=30)
        # The cut-off worker is back in service.
        more = hold(control, 0.0, 20)
        workers.wait(settled(control, ids + more), cut, other, timeout=30)
        final = jobs(control, ids)
        cut_log = workers.log(cut)

    started = [m for m in marks(workers.marks) if m.event == "start" and m.job in ids]
    by_cut = {m.job for m in started if m.pid == cut.pid}
    twice = {m.job for m in started if m.pid != cut.pid} & by_cut
    ended_by_other = events(workers.marks, other.pid, "end")
    ended_by_cut = {
        job: m for job, m in events(workers.marks, cut.pid, "end").items() if job in ids
    }
    print(
        f"[mariadb] partition of {partition:.1f} s (lease {LEASE} s): the other worker had "
        f"all 10 jobs after {rescued_after:.1f} s; the cut-off worker stopped its 5 long "
        f"handlers {stopped_after:.1f} s after the link returned; its 5 short ones had "
        f"finished during the partition; {len(twice)} job(s) ran twice, of {len(by_cut)} held"
    )
    assert by_cut == set(ids) and twice == set(ids)  # it held all ten: all ran again
    assert len(twice) <= int(env["ROTA_TEST_CONCURRENCY"])
    assert not set(ended_by_cut) & set(long), "a long handler ran to its end on the cut host"
    assert set(ended_by_cut) == set(short)
    for job_id, job in final.items():
        mark = ended_by_other[job_id]
        assert job.state is JobState.SUCCEEDED
        assert job.attempt == mark.attempt, (job, mark)
        assert job.finished_at is not None
        # Written by the other worker's report, never overwritten by the late one.
        assert abs(job.finished_at.timestamp() - mark.at) < 1.5, (job, mark)
        assert any(error.code == "LEASE_EXPIRED" for error in job.errors), job.errors
    assert LOST in cut_log or "database error" in cut_log, cut_log[-3000:]


def test_latency_and_dropped_connections_every_job_succeeds(
    mariadb_drivers: Database, tmp_path: Path
) -> None:
    mariadb = mariadb_drivers
    real = make_url(mariadb.url)
    env = {"ROTA_TEST_CONCURRENCY": "25", "ROTA_TEST_READ_TIMEOUT": "5", "ROTA_TEST_KEEPALIVE": "4"}
    target = (real.host or "127.0.0.1", real.port or 3306)
    with (
        worker_host(2) as host,
        proxy((host.gateway, 0), target, delay=0.05, cut_ratio=0.01, seed=14) as forwarder,
        deployment(mariadb, tmp_path, env) as (control, workers),
    ):
        url = real.set(host=host.gateway, port=forwarder.port).render_as_string(False)
        command = host.python("worker", APP, "--grace", str(GRACE))
        procs = [workers.start(url, command=command) for _ in range(2)]
        started = time.monotonic()
        ids = hold(control, 0.0, 2000)
        workers.wait(settled(control, ids), *procs, timeout=90)
        elapsed = time.monotonic() - started
        final = jobs(control, ids)
        logs = [workers.log(process) for process in procs]

    runs = [m for m in marks(workers.marks) if m.event == "start"]
    again = len(runs) - len({m.job for m in runs})
    lost = sum(log.count(LOST) for log in logs)
    print(
        f"[{real.drivername}] 2,000 jobs, 2 workers x 25 on a test host, +50 ms per answer, 1 % of "
        f"requests cut: {elapsed:.1f} s; {forwarder.connections} connections, "
        f"{forwarder.chunks} requests, {forwarder.cuts} cut; {lost} losses logged; "
        f"{again} attempt(s) re-run"
    )
    assert {job.state for job in final.values()} == {JobState.SUCCEEDED}
    assert len(final) == len(ids)
    assert forwarder.cuts >= 5, "the run met dropped connections"
    assert lost >= 1


@pytest.mark.parametrize(
    ("bound", "read_timeout", "keepalive"),
    [("read_timeout", 2.5, 30.0), ("keepalive", 30.0, 4.0)],
)
@pytest.mark.parametrize("server_db", EVERY_SERVER, indirect=True)
def test_a_blackholed_connection_is_noticed_within_its_bound(
    server_db: Database,
    mysql_driver: str | None,
    tmp_path: Path,
    bound: str,
    read_timeout: float,
    keepalive: float,
) -> None:
    if server_db.backend == "postgres" and bound == "read_timeout":
        pytest.skip("libpq has no read timeout: PostgreSQL relies on keepalive")
    server_db = on_driver(server_db, mysql_driver)
    real = make_url(server_db.url)
    default_port = 3306 if server_db.backend == "mariadb" else 5432
    target = (real.host or "127.0.0.1", real.port or default_port)
    env = {
        "ROTA_TEST_CONCURRENCY": "4",
        "ROTA_TEST_READ_TIMEOUT": str(read_timeout),
        "ROTA_TEST_KEEPALIVE": str(keepalive),
    }
    with (
        worker_host(3) as host,
        proxy((host.gateway, 0), target) as forwarder,
        deployment(server_db, tmp_path, env) as (control, workers),
    ):
        url = real.set(host=host.gateway, port=forwarder.port).render_as_string(False)
        process = workers.start(url, command=host.python("worker", APP, "--grace", str(GRACE)))
        before = hold(control, 0.0, 5)
        workers.wait(settled(control, before), process, timeout=20)
        losses = workers.log(process).count(LOST)

        forwarder.blackhole_next()
        wait_until(lambda: forwarder.blackholed is not None, timeout=10)
        assert forwarder.blackholed is not None
        blackholed_at, port = forwarder.blackholed
        if bound == "keepalive":
            host.drop_connection(port)
        workers.wait(
            lambda: workers.log(process).count(LOST) > losses, process, timeout=3 * keepalive
        )
        noticed = time.monotonic() - blackholed_at
        after = hold(control, 0.0, 5)
        workers.wait(settled(control, before + after), process, timeout=30)
        log = workers.log(process)

    if bound == "read_timeout":  # mysqlclient's: whole seconds, rota rounds up
        limit = math.ceil(read_timeout) if mysql_driver == "mysqldb" else read_timeout
    else:
        limit = keepalive
    line = next(line for line in log.splitlines()[::-1] if LOST in line)
    print(
        f"[{make_url(server_db.url).drivername}] blackholed connection (port {port}), "
        f"{bound} {limit:g} s: "
        f"noticed after {noticed:.2f} s: {re.sub(r'^.*?lost', 'lost', line)[:160]}"
    )
    assert noticed <= limit + 1.5, noticed
    if bound == "read_timeout":
        assert noticed >= limit - 0.5, "noticed by the read timeout, not sooner by chance"
