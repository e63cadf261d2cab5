"""A private three-node MariaDB Galera cluster, and haproxy in front of it as one writer.

Why this exists: issue 21 measures what happens to rota's jobs and cron ticks when the database
is a Galera cluster and its writer dies. Everything here is private to the run: each node is a
``mariadbd`` of its own (datadir under ``/tmp/rota-ha/galera-N``, its own ports, started with
``--defaults-file`` so the machine's ``/etc/mysql`` is never read), and the shared servers on
3306 and 5432 are never touched. Every process started is remembered by its pid and ended,
and every datadir removed, when the cluster is left (``with GaleraCluster() as cluster``),
even after an error; ``python scripts/ha/galera.py cleanup`` ends those of a run that was
itself killed (only processes whose command line names one of our datadirs or config files).

The settings Galera needs (``binlog_format=ROW``, ``innodb_autoinc_lock_mode=2``), the first
node bootstrapped with ``--wsrep-new-cluster`` and the others joined one at a time by an rsync
SST (quick from a fresh donor), each node with distinct group-communication, IST and SST ports;
haproxy in front (``galera_haproxy``: single-writer endpoints that fail over in order).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import galera_haproxy
from galera_haproxy import Endpoint
from galera_node import (
    DATABASE,
    MARIADBD,
    PASSWORD,
    ROOT,
    RUN_AS,
    SPREAD_PORT,
    USER,
    WRITER_PORT,
    Node,
    node_config,
    sql_url,
)

LOGS = Path("/tmp/rota-ha-logs/galera")
HAPROXY = ROOT / "galera-haproxy"
OWNER = ROOT / "galera-owner.pid"
CHECK_USER = "haproxy"
READY_TIMEOUT = 120.0


class GaleraCluster:
    """Three private Galera nodes and haproxy, started by ``start()`` (or ``with``), each process
    ended and each datadir removed by ``stop()``, whatever happened in between."""

    def __init__(self, size: int = 3, proxy: bool = True) -> None:
        self.nodes = [Node(i) for i in range(1, size + 1)]
        self.proxy = proxy
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.frozen: set[str] = set()

    @property
    def writer_url(self) -> str:
        """haproxy's endpoint: the first live node."""
        return sql_url(WRITER_PORT)

    @property
    def node_urls(self) -> list[str]:
        """Straight to each node, no failover."""
        return [node.url for node in self.nodes]

    @property
    def spread_url(self) -> str:
        """haproxy's round-robin endpoint: each new connection to the next live node."""
        return sql_url(SPREAD_PORT)

    @property
    def endpoint_urls(self) -> list[str]:
        """haproxy's endpoint of each node: that node while it lives, then the next ones."""
        return [sql_url(node.endpoint_port) for node in self.nodes]

    def endpoints(self) -> list[Endpoint]:
        servers = [(node.name, node.sql_port) for node in self.nodes]
        writer = Endpoint("writer", WRITER_PORT, servers)
        rotated = [
            Endpoint(node.name, node.endpoint_port, servers[i:] + servers[:i])
            for i, node in enumerate(self.nodes)
        ]
        spread = Endpoint("spread", SPREAD_PORT, servers, spread=True)
        return [writer, *rotated, spread]

    def __enter__(self) -> GaleraCluster:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Bootstrap the first node, join the others one by one, then put haproxy in front."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        busy = [p for p in self._ports() if _listening(p)]
        if busy:
            raise RuntimeError(f"ports already in use: {busy} (python {__file__} cleanup?)")
        remove_files(self.nodes)
        ROOT.mkdir(parents=True, exist_ok=True)
        OWNER.write_text(str(os.getpid()))
        for node in self.nodes:
            node.datadir.mkdir(parents=True)
            node.config.write_text(node_config(node, self.nodes))
            shutil.chown(node.home, RUN_AS, RUN_AS)
            shutil.chown(node.datadir, RUN_AS, RUN_AS)
        first, *others = self.nodes
        _run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={first.datadir}",
                f"--user={RUN_AS}",
                "--skip-test-db",
            ]
        )
        self._launch(first, "--wsrep-new-cluster")
        self.wait_synced(first)
        self.sql(first, _ACCOUNTS)
        for node in others:  # a donor serves one SST at a time: join in turn
            self._launch(node)
            self.wait_synced(node)
        if self.proxy:
            self._start_haproxy()

    def _ports(self) -> Iterator[int]:
        if self.proxy:
            yield from (endpoint.port for endpoint in self.endpoints())
        for node in self.nodes:
            yield node.sql_port
            yield from range(node.gcomm_port, node.gcomm_port + 3)

    def _launch(self, node: Node, *options: str) -> None:
        command = [MARIADBD, f"--defaults-file={node.config}", f"--user={RUN_AS}", *options]
        with (node.home / "stdout.log").open("ab") as out:
            self.processes[node.name] = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def _start_haproxy(self) -> None:
        endpoints = self.endpoints()
        self.processes["haproxy"] = galera_haproxy.start(endpoints, CHECK_USER, HAPROXY)
        ports = [endpoint.port for endpoint in endpoints]
        _wait(lambda: all(map(_listening, ports)), "haproxy", 10.0)

    def status(self, node: Node) -> dict[str, str]:
        """The node's ``wsrep_%`` status (empty while it does not answer)."""
        try:
            text = self.sql(node, "SHOW GLOBAL STATUS LIKE 'wsrep_%'", quiet=True)
        except subprocess.CalledProcessError:
            return {}
        return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)

    def wait_synced(self, node: Node, timeout: float = READY_TIMEOUT) -> None:
        """Until the node is a synced member of the primary component and takes queries."""

        def synced() -> bool:
            process = self.processes.get(node.name)
            if process is not None and process.poll() is not None:
                tail = node.log.read_text(errors="replace")[-3000:] if node.log.exists() else ""
                raise RuntimeError(f"{node.name} exited with {process.returncode}:\n{tail}")
            state = self.status(node)
            return state.get("wsrep_ready") == "ON" and (
                state.get("wsrep_local_state_comment") == "Synced"
            )

        _wait(synced, node.name, timeout)

    def sql(self, node: Node, statements: str, *, quiet: bool = False) -> str:
        """Run SQL on the node as root over its socket (unix-socket login: we are root)."""
        command = ["mariadb", "--no-defaults", f"--socket={node.socket}", "-uroot", "-N", "-B"]
        done = subprocess.run(
            [*command, "-e", statements],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if done.returncode and not quiet:
            print(done.stderr, file=sys.stderr)
        done.check_returncode()
        return done.stdout

    def kill(self, index: int = 1) -> float:
        """``kill -9`` node ``index`` (1-based), the failure the scenarios measure; its time."""
        process = self.processes.pop(f"galera-{index}")
        killed = time.time()
        process.send_signal(signal.SIGKILL)
        process.wait()
        return killed

    def freeze(self, index: int = 1) -> float:
        """``SIGSTOP`` node ``index``: a host that hangs or drops off the network, whose sockets
        stay open (no reset, unlike a killed process on this machine), so the other nodes and
        haproxy notice it only by their timeouts; its time."""
        self.frozen.add(f"galera-{index}")
        frozen = time.time()
        self.processes[f"galera-{index}"].send_signal(signal.SIGSTOP)
        return frozen

    def alive(self) -> list[Node]:
        """The nodes neither killed nor frozen."""
        return [n for n in self.nodes if n.name in self.processes and n.name not in self.frozen]

    def stop(self) -> None:
        """End every process started (SIGTERM, SIGKILL after 30 s) and remove the files."""
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
                process.send_signal(signal.SIGCONT)  # a frozen node, to hear it
        deadline = time.monotonic() + 30
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        keep_logs()
        remove_files(self.nodes)


_ACCOUNTS = f"""
CREATE DATABASE {DATABASE};
CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';
GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1';
CREATE USER '{CHECK_USER}'@'127.0.0.1';
"""


def keep_logs() -> None:
    """Copy the logs of the run to ``LOGS`` (the last run's only), for a failure to be read."""
    shutil.rmtree(LOGS, ignore_errors=True)
    LOGS.mkdir(parents=True)
    for path in ROOT.glob("galera-*/*.log"):
        shutil.copy(path, LOGS / f"{path.parent.name}-{path.name}")


def remove_files(nodes: list[Node]) -> None:
    for home in [*(node.home for node in nodes), HAPROXY]:
        shutil.rmtree(home, ignore_errors=True)
    OWNER.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # gone, or holding another topology's files
        ROOT.rmdir()


def cleanup() -> list[int]:
    """End processes of an earlier run that was itself killed: only those whose command line
    names a directory of ours, found in ``/proc``; then remove the files. The pids ended.

    A cluster whose owner (the process that started it) still lives is left alone: that run
    ends it itself, and a clean-up run beside it (another topology's) must not pull it away.
    """
    owner = _owner()
    if owner is not None:
        print(f"Galera cluster in use by pid {owner}; left alone", file=sys.stderr)
        return []
    mark = f"{ROOT}/galera-"
    ended = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if mark in command:
            os.kill(int(entry.name), signal.SIGKILL)
            ended.append(int(entry.name))
    remove_files([Node(i) for i in range(1, 10)])
    return ended


def _owner() -> int | None:
    """The live process, other than this one, that started the cluster, if any."""
    try:
        pid = int(OWNER.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return None if pid == os.getpid() else pid


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait(ready: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready within {timeout:.0f} s")
        time.sleep(0.25)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{command[0]} failed:\n{done.stdout}\n{done.stderr}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("action", choices=["check", "up", "cleanup"])
    args = parser.parse_args(argv)
    if args.action == "cleanup":
        print(f"ended {cleanup() or 'no processes'}; removed {ROOT}/galera-*")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with GaleraCluster() as cluster:
        print(f"cluster up in {time.monotonic() - started:.1f} s; writer {cluster.writer_url}")
        for node in cluster.nodes:
            state = cluster.status(node)
            size, comment = state.get("wsrep_cluster_size"), state.get("wsrep_local_state_comment")
            print(f"  {node.name}: {node.url} size={size} {comment}")
        if args.action == "up":
            print("up until Ctrl-C")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
