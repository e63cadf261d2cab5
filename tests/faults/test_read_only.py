"""A worker whose server stops taking writes, as an old primary does when it becomes a replica
(issue 21, item 4); URLs that name several servers.

The shared servers must never change their global settings, so read-only is switched on servers
of the test's own: a ``mariadbd`` on a free port over a fresh datadir (``SET GLOBAL read_only``,
which binds the test's user, who lacks ``READ ONLY ADMIN``), and a PostgreSQL cluster
(``own_postgres``) whose database gets ``default_transaction_read_only``, its sessions ended as a
restart would end them. In both the worker logs transient errors, marks nothing done, drops its
pooled connections, ``rota check`` says the server is not writable; once writes return every
job succeeds, each run once, and no connection of before the switch is used again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event, text
from sqlalchemy.engine import Engine, create_engine

from rota import ConfigError, Enqueue, JobContext, JobState, Rota
from rota.cli import main
from rota.core.urls import describe_url
from rota.store.urls import normalise_url
from tests.conftest import server_url
from tests.faults.own_postgres import Cluster, own_postgres
from tests.faults.servers import free_port
from tests.helpers import eventually, sql_store
from tests.requirements import program, require, root

JOBS = 100
READ_ONLY_SECONDS = 2.5
READY_TIMEOUT = 30.0
MARIADB_PREFIX = "rota_read_only_"


# -- URLs that name several servers ------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app@/orders?host=a:5432,b:5433&target_session_attrs=read-write",
        "postgresql://app@/orders?host=a:5432&host=b:5433&target_session_attrs=read-write",
    ],
)
def test_several_postgres_hosts_reach_libpq_as_hosts_and_ports(url: str) -> None:
    engine = create_engine(normalise_url(url))
    _, params = engine.dialect.create_connect_args(engine.url)
    assert (params["host"], params["port"]) == ("a,b", "5432,5433")
    assert params["target_session_attrs"] == "read-write"
    assert describe_url(url) == "postgresql database 'orders' on a:5432,b:5433"


@pytest.mark.parametrize(
    "url",
    [
        "mysql://app:secret@db1,db2/orders",
        "mysql://app:secret@db1:3306,db2:3306/orders",
        "mariadb://app:secret@/orders?host=db1&host=db2",
    ],
)
def test_a_mysql_url_with_several_hosts_names_what_to_use_instead(url: str) -> None:
    with pytest.raises(ConfigError, match="haproxy or ProxySQL") as raised:
        normalise_url(url)
    assert "secret" not in str(raised.value)


def test_postgres_hosts_before_the_path_are_pointed_to_the_query_string() -> None:
    with pytest.raises(ConfigError, match=r"\?host=a:5432,b:5432&target_session_attrs"):
        normalise_url("postgresql://app:secret@db1:5432,db2:5432/orders")


# -- servers of the test's own ----------------------------------------------------------------


@dataclass
class OwnMariaDB:
    port: int
    socket: Path

    @property
    def url(self) -> str:
        return f"mysql://rota@127.0.0.1:{self.port}/rota"

    def admin(self, sql: str) -> str:
        """``sql`` as root over the socket (root has ``READ ONLY ADMIN``: unbound by read-only)."""
        command = ["mariadb", "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-e"]
        return subprocess.run([*command, sql], check=True, capture_output=True, text=True).stdout

    def read_only(self, on: bool) -> None:
        self.admin(f"SET GLOBAL read_only = {int(on)}")


def _start_mariadb(datadir: Path, port: int, socket: Path) -> subprocess.Popen[bytes]:
    install = ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root"]
    subprocess.run([*install, "--skip-test-db"], check=True, capture_output=True)
    server = [
        "mariadbd",
        "--no-defaults",
        f"--datadir={datadir}",
        f"--port={port}",
        f"--socket={socket}",
        "--bind-address=127.0.0.1",
        "--user=root",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=32M",
        "--innodb-flush-log-at-trx-commit=0",
        f"--log-error={datadir}/error.log",
        # Its own: at start a server deletes every #sql file in its tmpdir, so a shared /tmp
        # would take the temporary tables of the MariaDB the other tests use.
        f"--tmpdir={datadir.parent}",
    ]
    return subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def own_mariadb() -> Iterator[OwnMariaDB]:
    """A ``mariadbd`` of this module on a free port, its user ``rota`` granted only the database
    ``rota``; stopped and its datadir removed at the end, whatever happened."""
    server_url("mariadb")  # skipped, or failed in CI, as the shared server's tests are
    require(
        root("a MariaDB server of the test's own"),
        *(program(name, "mariadb-server") for name in ("mariadb-install-db", "mariadbd")),
        program("mariadb", "mariadb-client"),
    )
    workdir = Path(tempfile.mkdtemp(prefix=MARIADB_PREFIX))
    server = OwnMariaDB(free_port(), workdir / "sock")
    process: subprocess.Popen[bytes] | None = None
    try:
        process = _start_mariadb(workdir / "data", server.port, server.socket)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            with contextlib.suppress(subprocess.CalledProcessError):
                server.admin("SELECT 1")
                break
            if process.poll() is not None or time.monotonic() > deadline:
                log = (workdir / "data" / "error.log").read_text(errors="replace")[-2000:]
                raise AssertionError(f"the test's own mariadbd did not start:\n{log}")
            time.sleep(0.1)
        server.admin(
            "CREATE DATABASE rota; CREATE USER rota@'127.0.0.1'; "
            "GRANT ALL ON rota.* TO rota@'127.0.0.1'"
        )
        yield server
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    with own_postgres() as cluster:
        yield cluster


# -- the worker through read-only and back -----------------------------------------------------


@dataclass
class Pool:
    """When each pooled connection was opened, and which were handed out when."""

    checkouts: list[tuple[float, float]]
    """``(handed out at, opened at)`` for each checkout (0 for one opened before watching)."""

    @classmethod
    def watch(cls, engine: Engine) -> Pool:
        pool = cls([])

        @event.listens_for(engine, "connect")
        def _opened(dbapi_connection: Any, record: Any) -> None:
            record.info["test_opened"] = time.monotonic()

        @event.listens_for(engine, "checkout")
        def _handed(dbapi_connection: Any, record: Any, proxy: Any) -> None:
            pool.checkouts.append((time.monotonic(), record.info.get("test_opened", 0.0)))

        return pool

    def reused_after(self, moment: float, opened_before: float) -> list[tuple[float, float]]:
        return [
            (at, opened) for at, opened in self.checkouts if at > moment and opened < opened_before
        ]


def check(url: str, prefix: str) -> tuple[int, dict[str, Any]]:
    """``rota check --json``'s exit code and report."""
    result = CliRunner().invoke(main, ["check", "--url", url, "--table-prefix", prefix, "--json"])
    return result.exit_code, json.loads(result.stdout)


def work_through_read_only(
    url: str, prefix: str, switch: Callable[[bool], None], caplog: pytest.LogCaptureFixture
) -> dict[str, Any]:
    """Jobs on one worker; read-only switched on mid-run for ``READ_ONLY_SECONDS``, then off;
    what ``rota check`` said meanwhile. Asserts what holds on every backend."""
    rota = Rota(url, table_prefix=prefix, poll_interval=0.05, connect_timeout=10, lease_seconds=20)
    runs: list[int] = []

    @rota.task
    def step(ctx: JobContext) -> None:
        runs.append(ctx.job_id)
        time.sleep(0.05)

    rota.jobs()  # migrates
    pool = Pool.watch(sql_store(rota).engine)

    def succeeded() -> int:
        return rota.counts().by_queue.get("default", {}).get(JobState.SUCCEEDED.value, 0)

    async def scenario() -> dict[str, Any]:
        await rota.start()
        try:
            ids = rota.queue_many([Enqueue("step") for _ in range(JOBS)])
            await eventually(lambda: succeeded() >= 10, 20)
            switch(True)
            switched = time.monotonic()
            await asyncio.sleep(0.5)  # a batch written as the switch came may still land
            before = succeeded()
            exit_code, report = await asyncio.to_thread(check, url, prefix)
            await asyncio.sleep(max(0.0, switched + READ_ONLY_SECONDS - time.monotonic()))
            assert succeeded() == before, "nothing is marked done while the server is read-only"
            switch(False)
            resumed = time.monotonic()
            await eventually(lambda: succeeded() == JOBS, 30)
        finally:
            await rota.stop(grace=5)
        assert all(rota.job(job_id).state is JobState.SUCCEEDED for job_id in ids)
        assert set(Counter(runs).values()) == {1}, "every job ran once"
        assert pool.reused_after(resumed, opened_before=switched) == [], "the pool was dropped"
        return {"exit_code": exit_code, "report": report, "before": before}

    try:
        with caplog.at_level(logging.INFO, logger="rota"):
            seen = asyncio.run(scenario())
    finally:
        sql_store(rota).engine.dispose()
    assert 10 <= seen["before"] < JOBS, "the switch came mid-run"
    events = [getattr(record, "event", None) for record in caplog.records]
    assert "db.read_only" in events, "the refusal was logged and dropped the pool"
    codes = {getattr(record, "error_code", None) for record in caplog.records}
    assert "TRANSIENT_STORE_ERROR" in codes, "the worker's loops waited it out"
    assert seen["exit_code"] == 1 and seen["report"]["writable"] is False
    assert any(problem.startswith("SERVER_READ_ONLY") for problem in seen["report"]["problems"])
    return dict(seen["report"])


@pytest.mark.slow
def test_a_worker_waits_out_a_read_only_mariadb(
    own_mariadb: OwnMariaDB, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = f"t{os.getpid()}_"
    try:
        report = work_through_read_only(own_mariadb.url, prefix, own_mariadb.read_only, caplog)
    finally:
        own_mariadb.read_only(False)
    assert report["read_only"] == "read_only is on (a replica, or a primary being demoted)"
    assert report["reached"].startswith(f"127.0.0.1:{own_mariadb.port} (node ")


@pytest.mark.slow
def test_a_worker_waits_out_a_read_only_postgres_database(
    own_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    admin = create_engine(normalise_url(own_cluster.url), isolation_level="AUTOCOMMIT")
    held = admin.connect()  # opened before the switch: not read-only itself

    def switch(on: bool) -> None:
        setting = (
            "SET default_transaction_read_only = on"
            if on
            else "RESET default_transaction_read_only"
        )
        held.execute(text(f"ALTER DATABASE postgres {setting}"))
        if on:  # its sessions end, as a primary's do when it restarts as a standby
            held.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                )
            )

    try:
        report = work_through_read_only(own_cluster.url, "t_", switch, caplog)
    finally:
        held.execute(text("ALTER DATABASE postgres RESET default_transaction_read_only"))
        held.close()
        admin.dispose()
    assert report["read_only"] == "default_transaction_read_only is on"
    assert report["reached"] == f"127.0.0.1:{own_cluster.port}"


@pytest.mark.slow
def test_a_multi_host_postgres_url_reaches_the_server_that_answers(own_cluster: Cluster) -> None:
    hosts = f"127.0.0.1:{free_port()},127.0.0.1:{own_cluster.port}"
    url = f"postgresql://postgres@/postgres?host={hosts}&target_session_attrs=read-write"
    rota = Rota(url, table_prefix="multi_", connect_timeout=10)

    @rota.task
    def hello(ctx: JobContext) -> str:
        return "hello"

    try:
        job_id = rota.queue(hello)
        assert rota.drain().succeeded == 1
        assert rota.job(job_id).state is JobState.SUCCEEDED
    finally:
        sql_store(rota).engine.dispose()
    exit_code, report = check(url, "multi_")
    assert exit_code == 0, report["problems"]
    assert report["database"] == f"postgresql database 'postgres' on {hosts}"
    assert (report["reached"], report["writable"]) == (f"127.0.0.1:{own_cluster.port}", True)
