"""What the configuration checks and the store applies to every connection, the prefix of
rota's table names and the default namespace: settings both need, kept here so the
configuration imports nothing of the store."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TABLE_PREFIX = "rota_"
"""The prefix of rota's table names unless ``Rota(table_prefix=...)`` gives another."""
DEFAULT_NAMESPACE = "default"
"""The namespace of a ``Rota`` that names none: every row written before namespaces existed
is in it too."""
KEEPALIVE_PROBES = 3


@dataclass(frozen=True)
class ConnectionSettings:
    """How long one connection may stay silent before rota takes it as lost (``RotaConfig``'s
    ``read_timeout``, ``write_timeout`` and ``keepalive``); the defaults are ``RotaConfig``'s."""

    read_timeout: float = 60.0
    """Longest wait for the server's answer to one statement (MySQL/MariaDB)."""
    write_timeout: float = 60.0
    """Longest wait for the kernel to take a statement's bytes (MySQL/MariaDB)."""
    keepalive: float = 15.0
    """Seconds after which a peer that answers neither TCP keepalive probes nor sent data is
    taken as gone: the kernel then fails the socket, whatever the driver is waiting for."""

    def keepalive_probes(self) -> tuple[int, int, int]:
        """``(idle, interval, count)`` in whole seconds, adding up to at most ``keepalive``:
        three probes a sixth of it apart after the connection has been quiet for the rest."""
        interval = max(1, int(self.keepalive / 6))
        idle = max(1, int(self.keepalive - KEEPALIVE_PROBES * interval))
        return idle, interval, KEEPALIVE_PROBES

    def user_timeout_ms(self) -> int:
        """``TCP_USER_TIMEOUT``: how long sent data may stay unacknowledged (keepalive does not
        probe while data is in flight, and retransmissions alone last about 15 minutes)."""
        return int(self.keepalive * 1000)


DEFAULT_CONNECTION = ConnectionSettings()
