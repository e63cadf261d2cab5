"""A PostgreSQL cluster of the test's own, for the tests that stop the server under a worker.

The suite runs in parallel (pytest-xdist), so stopping the shared server on 5432 would fail
whatever other test uses it at that moment. These tests make their own cluster instead, with
Debian's ``pg_createcluster`` on a free port (trust authentication on 127.0.0.1, or a superuser
password for the tests of a wrong one; ``fsync`` off), stop and start it for real with
``pg_ctlcluster``, and drop it afterwards. A cluster left behind by a run that was killed is
dropped by the next one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from tests.conftest import Database, server_url
from tests.faults.servers import free_port
from tests.requirements import program, require, root

PREFIX = "rota_faults_"
READY_TIMEOUT = 60.0


def _version() -> str:
    versions = sorted(os.listdir("/etc/postgresql")) if Path("/etc/postgresql").is_dir() else []
    no_server = None if versions else "no PostgreSQL in /etc/postgresql: apt-get install postgresql"
    require(
        root("a PostgreSQL cluster of the test's own"),
        program("pg_createcluster", "postgresql-common"),
        program("pg_ctlcluster", "postgresql-common"),
        no_server,
    )
    return versions[-1]


def _quietly(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


@dataclass
class Cluster:
    version: str
    name: str
    port: int
    password: str | None = None
    """The superuser's, checked on TCP connections; ``None``: they are trusted."""

    @property
    def url(self) -> str:
        return self.url_with(self.password)

    def url_with(self, password: str | None) -> str:
        """The superuser's URL, with ``password`` (right or wrong) in it."""
        url = URL.create("postgresql", "postgres", password, "127.0.0.1", self.port, "postgres")
        return url.render_as_string(hide_password=False)

    def database(self) -> Database:
        return Database("postgres", self.url, f"t{uuid.uuid4().hex[:10]}_")

    def ready(self) -> bool:
        probe = ["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        return subprocess.run(probe, check=False).returncode == 0

    def start(self) -> None:
        _quietly("pg_ctlcluster", "--skip-systemctl-redirect", self.version, self.name, "start")
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.ready():
            if time.monotonic() > deadline:
                raise AssertionError(f"PostgreSQL {self.name} did not answer within 60 s")
            time.sleep(0.1)

    def stop(self) -> None:
        stop = ["pg_ctlcluster", "--skip-systemctl-redirect", self.version, self.name, "stop"]
        _quietly(*stop, "-m", "fast")

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The server is down inside the block and answering again after it, whatever happens."""
        self.stop()
        try:
            yield
        finally:
            self.start()


def _drop(version: str, name: str) -> None:
    subprocess.run(["pg_dropcluster", "--stop", version, name], check=False, capture_output=True)


def _drop_abandoned(version: str) -> None:
    """Clusters of earlier runs whose process is gone (a run killed before its clean-up)."""
    for entry in Path("/etc/postgresql", version).glob(f"{PREFIX}*"):
        pid = entry.name.removeprefix(PREFIX).split("_")[0]
        if pid.isdigit() and not Path("/proc", pid).exists():
            _drop(version, entry.name)


@contextlib.contextmanager
def own_postgres(password: str | None = None) -> Iterator[Cluster]:
    """A running cluster on a free port, dropped when the block ends.  With a ``password``,
    TCP connections must give it (SCRAM)."""
    server_url("postgres")  # skipped, or failed in CI, as the shared server's tests are
    version = _version()
    _drop_abandoned(version)
    name = f"{PREFIX}{os.getpid()}_{uuid.uuid4().hex[:6]}"
    cluster = Cluster(version, name, free_port(), password)
    create = ["pg_createcluster", version, cluster.name, "-p", str(cluster.port)]
    with tempfile.NamedTemporaryFile("w") as secret:
        auth = ["--auth=trust"]
        if password is not None:  # initdb runs as postgres and reads it from a file
            secret.write(password)
            secret.flush()
            os.chmod(secret.name, 0o644)
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={secret.name}"]
        _quietly(*create, "-o", "fsync=off", "--", *auth)
    try:
        cluster.start()
        yield cluster
    finally:
        _drop(version, cluster.name)
