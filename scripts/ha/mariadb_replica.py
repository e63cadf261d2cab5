"""MariaDB primary + one replica (GTID, asynchronous or semi-synchronous), failed over by hand.

Why: issue 21 asks how many jobs whose ``queue()`` returned a promoted replica has lost, and
what happens to cron ticks, for the setup most MySQL users run (Orchestrator, MHA, RDS
read-replica promotion do the same steps as ``fail`` below). Two private ``mariadbd`` on
3407 (primary) and 3408 (replica), their datadirs under ``/tmp/rota-ha/replica``; each
started with ``--defaults-file`` so ``/etc/mysql`` is never read, and the shared server on 3306
is never touched. The workers and the producer reach the writer through a ``Forwarder`` on 3410
(the virtual IP); the replica reaches the primary through another on 3409 that adds the
replication link's latency (``common.LINK_DELAY``).

The failover, as a tool would do it: ``kill -9`` the primary and cut the replication link at
once (a host lost), let the replica apply what its relay log already holds, ``STOP SLAVE;
RESET SLAVE ALL; SET GLOBAL read_only = 0``, and repoint the writer endpoint. The rota user
has privileges on its own database only, so ``read_only`` binds it (users with ``READ_ONLY
ADMIN`` or ``SUPER`` bypass it). Semi-synchronous mode uses MariaDB's built-in plugin with
``rpl_semi_sync_master_wait_point = AFTER_SYNC``: a commit returns once the replica has the
transaction in its relay log (or after ``rpl_semi_sync_master_timeout``, 10 s, without it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from workload import Topology

from common import (
    LINK_DELAY,
    REMOTE_DELAY,
    ROOT,
    Forwarder,
    end,
    free,
    kill,
    quietly,
    remove,
    running,
    wait_for,
)
from common import wait_until_listening as wait_listening

HOME = ROOT / "replica"
RUN_AS = "mysql"
PRIMARY_PORT, REPLICA_PORT, LINK_PORT, WRITER_PORT = 3407, 3408, 3409, 3410
USER = PASSWORD = DATABASE = "rota"
READY_TIMEOUT = 60.0
APPLY_TIMEOUT = 60.0
"""How long the promotion waits for the replica to apply its relay log."""

SEMI_SYNC_PRIMARY = """\
rpl_semi_sync_master_enabled = ON
rpl_semi_sync_master_wait_point = AFTER_SYNC
rpl_semi_sync_master_timeout = 10000
"""
SEMI_SYNC_REPLICA = "rpl_semi_sync_slave_enabled = ON\n"
ACCOUNTS = f"""
CREATE DATABASE {DATABASE};
CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';
GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1';
CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';
"""


@dataclass
class Server:
    """One private ``mariadbd``: its directory, port and process."""

    name: str
    port: int
    server_id: int
    settings: str = ""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def home(self) -> Path:
        return HOME / self.name

    @property
    def socket(self) -> Path:
        return self.home / "mysqld.sock"

    def config(self) -> str:
        return f"""\
[mariadbd]
datadir = {self.home / "data"}
socket = {self.socket}
pid-file = {self.home / "mysqld.pid"}
log-error = {self.home / "error.log"}
tmpdir = {self.home}
port = {self.port}
bind-address = 127.0.0.1
skip-name-resolve = ON
server-id = {self.server_id}
log-bin = binlog
log-slave-updates = ON
binlog-format = ROW
gtid-strict-mode = ON
sync-binlog = 1
innodb-flush-log-at-trx-commit = 1
innodb-buffer-pool-size = 128M
max-connections = 300
{self.settings}"""

    def start(self) -> None:
        (self.home / "data").mkdir(parents=True)
        (self.home / "my.cnf").write_text(self.config())
        for path in (self.home, self.home / "data"):
            shutil.chown(path, RUN_AS, RUN_AS)
        install = ["mariadb-install-db", "--no-defaults", f"--datadir={self.home / 'data'}"]
        quietly([*install, f"--user={RUN_AS}", "--skip-test-db"])
        command = ["mariadbd", f"--defaults-file={self.home / 'my.cnf'}", f"--user={RUN_AS}"]
        with (self.home / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_listening(self.port, self.process, READY_TIMEOUT)

    def sql(self, statements: str) -> str:
        """Run ``statements`` as root over the socket; tab-separated rows."""
        client = ["mariadb", "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-B"]
        return quietly(client, stdin=statements)

    def value(self, expression: str) -> str:
        return self.sql(f"SELECT {expression};").strip()

    def replica_status(self) -> dict[str, str]:
        text = quietly(
            ["mariadb", "--no-defaults", f"--socket={self.socket}", "-uroot", "-E"],
            stdin="SHOW SLAVE STATUS;",
        )
        pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
        return {key.strip(): value.strip() for key, value in pairs}


def applied(replica: Server) -> bool:
    """The replica's SQL thread has applied everything its IO thread received."""
    status = replica.replica_status()
    return status.get("Relay_Master_Log_File") == status.get("Master_Log_File") and status.get(
        "Exec_Master_Log_Pos"
    ) == status.get("Read_Master_Log_Pos")


@dataclass
class Pair:
    """The primary, its replica and the two forwarders, started and failed over."""

    semi_sync: bool
    delay: float = LINK_DELAY
    primary: Server = field(init=False)
    replica: Server = field(init=False)
    notes: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.primary = Server("primary", PRIMARY_PORT, 1, SEMI_SYNC_PRIMARY * self.semi_sync)
        self.replica = Server("replica", REPLICA_PORT, 2, SEMI_SYNC_REPLICA * self.semi_sync)
        self.writer = Forwarder(WRITER_PORT, PRIMARY_PORT)
        self.link = Forwarder(LINK_PORT, PRIMARY_PORT, delay=self.delay)

    def start(self) -> None:
        free(PRIMARY_PORT, REPLICA_PORT, LINK_PORT, WRITER_PORT)
        remove(HOME)
        HOME.mkdir(parents=True)
        self.writer.__enter__()
        self.link.__enter__()
        self.primary.start()
        self.replica.start()
        self.primary.sql(ACCOUNTS)
        self.replica.sql(
            "SET GLOBAL read_only = 1;"
            f"CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {LINK_PORT},"
            " MASTER_USER = 'repl', MASTER_PASSWORD = 'repl', MASTER_USE_GTID = slave_pos,"
            " MASTER_CONNECT_RETRY = 1;"
            "START SLAVE;"
        )
        target = self.primary.value("@@gtid_binlog_pos")
        wait_for(lambda: self.replica.value("@@gtid_slave_pos") == target, 30, "replica caught up")
        if self.semi_sync:
            wait_for(self.semi_sync_on, 30, "semi-synchronous replication on")

    def semi_sync_on(self) -> bool:
        status = "VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME"
        return self.primary.value(f"{status} = 'Rpl_semi_sync_master_status'") == "ON"

    def fail(self) -> float:
        """Kill the primary and lose the link; promote the replica; repoint the writer."""
        assert self.primary.process is not None
        self.link.repoint(None)
        killed = kill(self.primary.process)
        self.writer.repoint(None)
        wait_for(lambda: applied(self.replica), APPLY_TIMEOUT, "relay log applied")
        self.notes["replica_gtid_at_promotion"] = self.replica.value("@@gtid_slave_pos")
        self.replica.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0;")
        self.writer.repoint(REPLICA_PORT)
        return killed

    def stop(self) -> None:
        self.writer.close()
        self.link.close()
        end(self.primary.process)
        end(self.replica.process)
        remove(HOME)


def topology(servers: Pair) -> Topology:
    url = f"mysql+pymysql://{USER}:{PASSWORD}@127.0.0.1:{WRITER_PORT}/{DATABASE}"
    name = "mariadb semi-sync replica" if servers.semi_sync else "mariadb async replica"
    if servers.delay != LINK_DELAY:
        name += f", {servers.delay * 1000:.0f} ms link"
    servers.notes["link_delay_ms"] = servers.delay * 1000
    return Topology(name, url, servers.fail, notes=servers.notes)


SCENARIOS: dict[str, Callable[[], AbstractContextManager[Topology]]] = {
    "mariadb-async": lambda: running(Pair(semi_sync=False), topology),
    "mariadb-semisync": lambda: running(Pair(semi_sync=True), topology),
    "mariadb-async-remote": lambda: running(Pair(False, REMOTE_DELAY), topology),
}


def cleanup() -> list[int]:
    """SIGKILL the ``mariadbd`` of a run that was itself killed (only those started with a
    configuration under ``HOME``), remove their files; the pids ended."""
    ended = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command[0].endswith(b"mariadbd") and any(str(HOME).encode() in a for a in command):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                ended.append(int(entry.name))
    remove(HOME)
    return ended
