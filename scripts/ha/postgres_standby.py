"""PostgreSQL primary + streaming standby (asynchronous or synchronous), failed over by hand.

Why: issue 21 asks what a PostgreSQL failover (Patroni, RDS Multi-AZ, a script around
``pg_ctl promote``) does to rota's jobs and ticks. Two private clusters made with Debian's
``pg_createcluster`` (``rota_ha_primary`` on 5507, ``rota_ha_standby`` on 5508; trust
authentication on 127.0.0.1; ``fsync`` left on, the default, so that nothing here is weaker than
a real server), the standby cloned with ``pg_basebackup -R`` and streaming from the primary
through a ``Forwarder`` on 5509 that adds the link's latency (``common.LINK_DELAY``). The shared
cluster on 5432 is never touched. The workers use a multi-host URL with
``target_session_attrs=read-write``, so libpq finds whichever server accepts writes: nothing is
repointed.

The failover: ``kill -9`` the primary's postmaster and every backend at once and cut the link
(a host lost), then ``pg_ctlcluster ... promote`` the standby. Synchronous mode sets
``synchronous_standby_names = '*'`` (with ``synchronous_commit = on``, the default) on the
primary only: a commit returns once the standby has flushed it, and the promoted standby, with
no standby of its own, does not wait for one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from workload import Topology

from common import LINK_DELAY, REMOTE_DELAY, Forwarder, free, quietly, running, wait_for

PREFIX = "rota_ha_"
PRIMARY_PORT, STANDBY_PORT, LINK_PORT = 5507, 5508, 5509
READY_TIMEOUT = 60.0
SETTINGS = ("listen_addresses=localhost", "max_connections=200", "wal_sender_timeout=10s")
URL = (
    f"postgresql+psycopg://postgres@/postgres?host=127.0.0.1:{PRIMARY_PORT}"
    f"&host=127.0.0.1:{STANDBY_PORT}&target_session_attrs=read-write"
)


def version() -> str:
    versions = sorted(os.listdir("/etc/postgresql"), key=lambda v: [int(p) for p in v.split(".")])
    if not versions:
        raise RuntimeError("no PostgreSQL under /etc/postgresql (apt-get install postgresql)")
    return versions[-1]


@dataclass(frozen=True)
class Cluster:
    """One private cluster, by its Debian name."""

    version: str
    name: str
    port: int

    @property
    def datadir(self) -> Path:
        return Path("/var/lib/postgresql", self.version, self.name)

    def create(self, *settings: str) -> None:
        options = [item for setting in (*SETTINGS, *settings) for item in ("-o", setting)]
        create = ["pg_createcluster", self.version, self.name, "-p", str(self.port)]
        quietly([*create, *options, "--", "--auth=trust"])

    def control(self, action: str) -> None:
        quietly(["pg_ctlcluster", "--skip-systemctl-redirect", self.version, self.name, action])

    def start(self) -> None:
        self.control("start")
        probe = ["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        wait_for(lambda: subprocess.run(probe).returncode == 0, READY_TIMEOUT, self.name)

    def value(self, query: str) -> str:
        psql = ["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        return quietly([*psql, "-c", query]).strip()

    def processes(self) -> list[int]:
        """The postmaster and its children (backends, WAL sender, checkpointer ...)."""
        postmaster = int((self.datadir / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True)
        return [postmaster, *(int(pid) for pid in children.stdout.split())]

    def drop(self) -> None:
        drop = ["pg_dropcluster", "--stop", self.version, self.name]
        subprocess.run(drop, capture_output=True, check=False)


def clone(primary: Cluster, standby: Cluster) -> None:
    """``standby`` as a copy of ``primary`` streaming from it through the link's port."""
    standby.create()
    for entry in standby.datadir.iterdir():
        if entry.is_dir():
            quietly(["rm", "-rf", str(entry)])
        else:
            entry.unlink()
    backup = ["pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"]
    quietly([*backup, "-D", str(standby.datadir), "-R", "-X", "stream"], user="postgres")
    auto = standby.datadir / "postgresql.auto.conf"
    auto.write_text(auto.read_text().replace(f"port={primary.port}", f"port={LINK_PORT}"))


def cleanup() -> list[str]:
    """Drop every cluster of these scripts (``rota_ha_*``), a killed run's too; their names."""
    found = []
    for base in Path("/etc/postgresql").glob(f"*/{PREFIX}*"):
        Cluster(base.parent.name, base.name, 0).drop()
        found.append(base.name)
    return found


class Pair:
    """Primary, standby and the replication link; ``fail`` kills one and promotes the other."""

    def __init__(self, synchronous: bool, delay: float = LINK_DELAY) -> None:
        found = version()
        self.synchronous = synchronous
        self.primary = Cluster(found, f"{PREFIX}primary", PRIMARY_PORT)
        self.standby = Cluster(found, f"{PREFIX}standby", STANDBY_PORT)
        self.link = Forwarder(LINK_PORT, PRIMARY_PORT, delay=delay)
        self.delay = delay
        self.notes: dict[str, object] = {"link_delay_ms": delay * 1000}

    def start(self) -> None:
        free(PRIMARY_PORT, STANDBY_PORT, LINK_PORT)
        cleanup()
        self.link.__enter__()
        self.primary.create(*(["synchronous_standby_names=*"] if self.synchronous else []))
        self.primary.start()
        clone(self.primary, self.standby)
        self.standby.start()
        wanted = "sync" if self.synchronous else "async"
        query = "SELECT string_agg(sync_state, ',') FROM pg_stat_replication"
        streaming = f"the standby streaming ({wanted})"
        wait_for(lambda: self.primary.value(query) == wanted, READY_TIMEOUT, streaming)

    def fail(self) -> float:
        pids = self.primary.processes()
        self.link.repoint(None)
        killed = time.time()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.notes["standby_lsn_at_promotion"] = self.standby.value(
            "SELECT pg_last_wal_replay_lsn()"
        )
        self.standby.control("promote")
        in_recovery = "SELECT pg_is_in_recovery()"
        promoted = "the standby's promotion"
        wait_for(lambda: self.standby.value(in_recovery) == "f", READY_TIMEOUT, promoted, 0.05)
        return killed

    def stop(self) -> None:
        self.link.close()
        self.primary.drop()
        self.standby.drop()


def topology(clusters: Pair) -> Topology:
    name = "postgres sync standby" if clusters.synchronous else "postgres async standby"
    if clusters.delay != LINK_DELAY:
        name += f", {clusters.delay * 1000:.0f} ms link"
    return Topology(name, URL, clusters.fail, notes=clusters.notes)


SCENARIOS: dict[str, Callable[[], AbstractContextManager[Topology]]] = {
    "postgres-async": lambda: running(Pair(synchronous=False), topology),
    "postgres-sync": lambda: running(Pair(synchronous=True), topology),
    "postgres-async-remote": lambda: running(Pair(False, REMOTE_DELAY), topology),
}
