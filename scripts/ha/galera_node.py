"""One node of the private Galera cluster: its files, its ports and its whole configuration.

Why a module of its own: the ports and paths are the contract between the cluster
(``galera.py``), haproxy's endpoints and the runs; each is derived from the node's index, so
no two nodes (and no two endpoints) can share one, and nothing here lies outside
``/tmp/rota-ha/galera-N`` or away from the ports 4311-4318 and 4567-4589.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/tmp/rota-ha")
RUN_AS = "mysql"
"""The nodes' user: as root, the rsync daemon of an SST would drop to ``nobody``."""
MARIADBD = "/usr/sbin/mariadbd"
PROVIDER = "/usr/lib/galera/libgalera_smm.so"
USER = PASSWORD = DATABASE = "rota"
WRITER_PORT = 4315
"""haproxy's single-writer endpoint (node 1 first); the nodes listen on the ports after it, and
the endpoint preferring node ``k`` on ``WRITER_PORT - 4 + k`` (before it)."""
SPREAD_PORT = WRITER_PORT - 4
"""haproxy's round-robin endpoint over every node."""
GCOMM_PORT = 4567
"""Group communication of the first node; IST and SST take the next two, each node 10 more."""


@dataclass(frozen=True)
class Node:
    """One ``mariadbd`` of the cluster and the files and ports that are its alone."""

    index: int

    @property
    def name(self) -> str:
        return f"galera-{self.index}"

    @property
    def sql_port(self) -> int:
        return WRITER_PORT + self.index

    @property
    def gcomm_port(self) -> int:
        return GCOMM_PORT + 10 * (self.index - 1)

    @property
    def home(self) -> Path:
        """The node's directory: its datadir, configuration, socket and logs."""
        return ROOT / self.name

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def config(self) -> Path:
        return self.home / "my.cnf"

    @property
    def log(self) -> Path:
        return self.home / "error.log"

    @property
    def socket(self) -> Path:
        return self.home / "mysqld.sock"

    @property
    def url(self) -> str:
        return sql_url(self.sql_port)

    @property
    def endpoint_port(self) -> int:
        """haproxy's endpoint that prefers this node (then the next ones, in order)."""
        return WRITER_PORT - 4 + self.index


def sql_url(port: int) -> str:
    return f"mariadb+pymysql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"


def node_config(node: Node, nodes: list[Node]) -> str:
    """The node's whole configuration: the Galera settings, and ports no other node uses.

    ``innodb_flush_log_at_trx_commit=2`` is what Galera deployments run (durability comes from
    the other nodes holding each write set), and it keeps three nodes on one disk usable.
    """
    members = ",".join(f"127.0.0.1:{n.gcomm_port}" for n in nodes)
    gcomm, ist, sst = node.gcomm_port, node.gcomm_port + 1, node.gcomm_port + 2
    provider_options = f"gmcast.listen_addr=tcp://127.0.0.1:{gcomm};ist.recv_addr=127.0.0.1:{ist}"
    return f"""[mariadbd]
datadir = {node.datadir}
socket = {node.socket}
pid-file = {node.home / "mysqld.pid"}
tmpdir = {node.home}
log-error = {node.log}
port = {node.sql_port}
bind-address = 127.0.0.1
skip-name-resolve
character-set-server = utf8mb4
max_connections = 500
innodb_buffer_pool_size = 128M
innodb_log_file_size = 48M
innodb_flush_log_at_trx_commit = 2
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
wsrep_on = ON
wsrep_provider = {PROVIDER}
wsrep_cluster_name = rota-ha
wsrep_cluster_address = gcomm://{members}
wsrep_node_name = {node.name}
wsrep_node_address = 127.0.0.1:{gcomm}
wsrep_node_incoming_address = 127.0.0.1:{node.sql_port}
wsrep_provider_options = "{provider_options}"
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:{sst}
wsrep_slave_threads = 4
"""
