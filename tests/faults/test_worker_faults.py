"""Real worker processes against real servers that fail under them.

* A worker killed with SIGKILL mid-batch: every job still succeeds; the jobs that ran twice are
  exactly ones that worker held (at-least-once, bounded by what was in flight).
* Every connection of the workers killed five times during a run (MariaDB), the server stopped
  and started during a run (PostgreSQL, a cluster of the test's own: tests/faults/own_postgres.py):
  workers log the loss, reconnect with back-off, and
  every job succeeds with nothing left ``running``.
* The database down when the worker starts: it keeps trying and starts on its own once the
  database answers.

The MariaDB tests run through PyMySQL and through mysqlclient, whose errors differ.

Each attempt appends ``<job> <attempt> <pid>`` to a file of its process
(tests/apps/fault_app.py), which is how double runs are counted.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from rota import Enqueue, JobState, Rota
from tests.conftest import Database
from tests.faults.own_postgres import Cluster, own_postgres
from tests.faults.servers import (
    Forwarder,
    free_port,
    kill_connections,
    mariadb_user,
)
from tests.helpers import sql_store
from tests.workers import Workers

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A PostgreSQL server these tests may stop: not the one the rest of the suite uses."""
    with own_postgres() as cluster:
        yield cluster


APP = "tests.apps.fault_app:app"
CONCURRENCY = 10
JOB_SECONDS = 0.05
RUN_TIMEOUT = 90.0


def runs(marks: Path) -> Counter[int]:
    """How many attempts each job started, over every worker process."""
    counts: Counter[int] = Counter()
    for path in marks.glob("runs.*"):
        for line in path.read_text().splitlines():
            counts[int(line.split()[0])] += 1
    return counts


def settled(control: Rota, total: int) -> Callable[[], bool]:
    def check() -> bool:
        by_state = control.counts().by_queue.get("default", {})
        return by_state.get(JobState.SUCCEEDED.value, 0) == total

    return check


def assert_all_succeeded_once_at_least(control: Rota, ids: list[int], marks: Path) -> Counter[int]:
    states = Counter(job.state for job in control.store.reads.jobs(limit=len(ids) + 1))
    assert states == {JobState.SUCCEEDED: len(ids)}, states
    started = runs(marks)
    assert set(started) == set(ids)
    return started


@contextlib.contextmanager
def deployment(db: Database, tmp_path: Path) -> Iterator[tuple[Rota, Workers]]:
    """The test's own Rota (schema migrated) and the worker processes it starts."""
    control = Rota(db.url, table_prefix=db.prefix, connect_timeout=10)
    control.jobs()
    workers = Workers(
        db, control, tmp_path, app=APP, env={"ROTA_TEST_CONCURRENCY": str(CONCURRENCY)}
    )
    try:
        yield control, workers
    finally:
        workers.stop_all()
        sql_store(control).engine.dispose()


def queue(control: Rota, count: int) -> list[int]:
    return control.queue_many([Enqueue("record", JOB_SECONDS) for _ in range(count)])


def progress(workers: Workers, at_least: int) -> Callable[[], bool]:
    return lambda: sum(runs(workers.marks).values()) >= at_least


def kill_while_holding(control: Rota, victim: subprocess.Popen[bytes], marks: Path) -> None:
    """SIGKILL ``victim`` while it holds a running job: it is frozen (SIGSTOP) and killed only if
    a job it started is still ``running``; else it runs on a little and is looked at again. A kill
    between two batches would hold nothing and test nothing."""
    for _ in range(200):
        victim.send_signal(signal.SIGSTOP)
        started = {
            int(line.split()[0]) for line in (marks / f"runs.{victim.pid}").read_text().splitlines()
        }
        if any(control.job(job_id).state is JobState.RUNNING for job_id in started):
            victim.send_signal(signal.SIGKILL)
            assert victim.wait(timeout=10) == -signal.SIGKILL
            return
        victim.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    pytest.fail("the victim never held a running job")


def test_sigkill_mid_batch_reruns_only_what_the_dead_worker_held(
    server_db: Database, tmp_path: Path
) -> None:
    with deployment(server_db, tmp_path) as (control, workers):
        victim, *others = [workers.start() for _ in range(3)]
        ids = queue(control, 1000)
        workers.wait(progress(workers, 300), victim, *others, timeout=RUN_TIMEOUT)

        kill_while_holding(control, victim, workers.marks)
        workers.wait(settled(control, len(ids)), *others, timeout=RUN_TIMEOUT)

        started = assert_all_succeeded_once_at_least(control, ids, workers.marks)
        rescued = {
            job.id
            for job in control.store.reads.jobs(limit=len(ids))
            if any(error.code == "LEASE_EXPIRED" for error in job.errors)
        }
    twice = {job_id for job_id, count in started.items() if count > 1}
    print(
        f"[{server_db.backend}] 1,000 jobs, 3 workers x {CONCURRENCY}: killed pid {victim.pid} "
        f"holding {len(rescued)} job(s); {len(twice)} ran twice"
    )
    assert rescued, "the worker was killed while it held jobs"
    assert twice <= rescued, "only jobs the dead worker held may run again"
    # It held at most its slots, plus finished attempts not yet written back in one batch.
    assert len(rescued) <= 2 * CONCURRENCY
    assert max(started.values()) == 2


def test_mariadb_connections_killed_five_times_during_a_run(
    mariadb_drivers: Database, tmp_path: Path
) -> None:
    mariadb = mariadb_drivers
    with deployment(mariadb, tmp_path) as (control, workers), mariadb_user(mariadb) as url:
        user = str(make_url(url).username)
        procs = [workers.start(url) for _ in range(2)]
        ids = queue(control, 2000)
        kills = []
        for step in range(1, 6):
            workers.wait(progress(workers, step * 300), *procs, timeout=RUN_TIMEOUT)
            kills.append(kill_connections(mariadb, user))
        workers.wait(settled(control, len(ids)), *procs, timeout=RUN_TIMEOUT)
        assert_all_succeeded_once_at_least(control, ids, workers.marks)
        logs = [workers.log(process) for process in procs]

    driver = make_url(mariadb.url).drivername
    print(f"[{driver}] 2,000 jobs, 2 workers: connections killed per round {kills}")
    assert all(kills), kills
    for log in logs:
        assert "lost a database connection" in log, log[-3000:]


def test_postgres_stopped_and_started_during_a_run(cluster: Cluster, tmp_path: Path) -> None:
    with deployment(cluster.database(), tmp_path) as (control, workers):
        procs = [workers.start() for _ in range(2)]
        ids = queue(control, 2000)
        workers.wait(progress(workers, 600), *procs, timeout=RUN_TIMEOUT)
        with cluster.stopped():
            workers.wait(
                lambda: all("database error in" in workers.log(p) for p in procs),
                *procs,
                timeout=30,
            )
        workers.wait(settled(control, len(ids)), *procs, timeout=RUN_TIMEOUT)
        started = assert_all_succeeded_once_at_least(control, ids, workers.marks)
        logs = [workers.log(process) for process in procs]

    print(f"[postgres] 2,000 jobs, restart: {sum(c > 1 for c in started.values())} ran twice")
    for log in logs:
        assert "lost a database connection" in log, log[-3000:]
        assert "work again after" in log, log[-3000:]


def test_worker_started_before_postgres_comes_up_on_its_own(
    cluster: Cluster, tmp_path: Path
) -> None:
    with deployment(cluster.database(), tmp_path) as (control, workers):
        with cluster.stopped():
            process = workers.start(registered=False)
            workers.wait(
                lambda: workers.log(process).count("cannot reach") >= 3, process, timeout=30
            )
        workers.wait(lambda: workers.registered(process), process, timeout=30)
        ids = queue(control, 20)
        workers.wait(settled(control, len(ids)), process, timeout=RUN_TIMEOUT)
        assert "reached the postgresql database" in workers.log(process)


def test_worker_started_before_mariadb_answers_comes_up_on_its_own(
    mariadb_drivers: Database, tmp_path: Path
) -> None:
    real = make_url(mariadb_drivers.url)
    port = free_port()
    with deployment(mariadb_drivers, tmp_path) as (control, workers):
        process = workers.start(real.set(port=port).render_as_string(False), registered=False)
        workers.wait(lambda: workers.log(process).count("cannot reach") >= 3, process, timeout=30)
        forwarder = Forwarder(port, (real.host or "127.0.0.1", real.port or 3306))
        try:
            workers.wait(lambda: workers.registered(process), process, timeout=30)
            ids = queue(control, 20)
            workers.wait(settled(control, len(ids)), process, timeout=RUN_TIMEOUT)
            assert "reached the mysql database" in workers.log(process)
        finally:
            workers.stop_all()
            forwarder.close()


def test_sigterm_while_waiting_for_the_database_exits_at_once(
    mariadb: Database, tmp_path: Path
) -> None:
    url = make_url(mariadb.url).set(port=free_port()).render_as_string(False)
    with deployment(mariadb, tmp_path) as (_, workers):
        process = workers.start(url, registered=False)
        workers.wait(lambda: "cannot reach" in workers.log(process), process, timeout=30)
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout=6) == 0
        except subprocess.TimeoutExpired:
            pytest.fail("a worker waiting for its database ignored SIGTERM")
