"""haproxy in front of the Galera nodes: each endpoint a single writer that fails over in order.

Why haproxy and ``backup`` servers: Galera accepts writes on every node, but a job queue's claims
only skip each other's locks on one node (``SKIP LOCKED`` does not see another node's locks),
so the usual deployment sends every connection to one node and moves them all to the next one
when it dies. An endpoint here is a frontend whose backend lists the nodes in its own order, the
first as the server and the others as ``backup`` in turn (haproxy uses the first live backup
only, without ``allbackups``). The writer endpoint prefers node 1; the endpoint of node ``k``
prefers node ``k``: workers given different ones write to different nodes (multi-writer), yet
each still fails over when its node dies.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CHECK = "check inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions"
"""Health checked twice a second, down after two failures; ``shutdown-sessions`` closes the
sessions of a node found dead, so a worker learns of it at once, not at its read timeout."""


@dataclass(frozen=True)
class Endpoint:
    """One frontend: ``port``, and the ``(name, port)`` of each node in the order of preference."""

    name: str
    port: int
    servers: Sequence[tuple[str, int]]
    spread: bool = False
    """Every node at once, each new connection to the next (``balance roundrobin``): what a
    load balancer in front of Galera often does, and the most conflict-prone multi-writer."""


def config(endpoints: Sequence[Endpoint], check_user: str) -> str:
    """haproxy's configuration: ``redispatch`` sends a connection the dead node refused to the
    next server before the health check has noticed; the long client and server timeouts let
    rota's pooled connections idle; ``mysql-check`` logs in as a password-less user without
    privileges (``check_user``)."""
    sections = [
        "global\n    maxconn 4000\n",
        "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 1h\n"
        "    timeout server 1h\n    retries 3\n    option redispatch\n",
    ]
    for endpoint in endpoints:
        sections.append(
            f"frontend {endpoint.name}\n    bind 127.0.0.1:{endpoint.port}\n"
            f"    default_backend {endpoint.name}-nodes\n"
        )
        servers = "".join(
            f"    server {name} 127.0.0.1:{port} {CHECK}"
            f"{' backup' if rank and not endpoint.spread else ''}\n"
            for rank, (name, port) in enumerate(endpoint.servers)
        )
        balance = "    balance roundrobin\n" if endpoint.spread else ""
        sections.append(
            f"backend {endpoint.name}-nodes\n{balance}"
            f"    option mysql-check user {check_user} post-41\n{servers}"
        )
    return "\n".join(sections)


def start(endpoints: Sequence[Endpoint], check_user: str, home: Path) -> subprocess.Popen[bytes]:
    """haproxy in the foreground (``-db``) in a session of its own; its config and log in
    ``home``. The caller waits for its ports and ends it."""
    if shutil.which("haproxy") is None:
        raise RuntimeError("haproxy is not installed: apt-get install -y haproxy")
    home.mkdir(parents=True, exist_ok=True)
    path = home / "haproxy.cfg"
    path.write_text(config(endpoints, check_user))
    with (home / "haproxy.log").open("ab") as out:
        return subprocess.Popen(
            ["haproxy", "-db", "-f", str(path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
