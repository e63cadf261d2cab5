"""Test hosts across a real (virtual) network, and a proxy that delays, cuts and blackholes.

A test host is a network namespace joined to this one by a veth pair, on a /30 of its own in
10.251.0.0/16; every name starts with the run's prefix (``RUN``). The database servers listen on
127.0.0.1 only, so a host reaches them through a ``Proxy`` bound to the veth's address on this
side. A partition is ``iptables`` DROP rules on the host's end of the veth (inside its
namespace, so they also go with it). The kernel here has no ``netem`` (``tc qdisc add ...
netem`` is refused), so latency and dropped connections come from the proxy.

Everything a helper makes is removed in its ``finally``, whatever the test did; ``sweep()``
removes whatever an earlier run of this process's prefix left (it cannot, but it costs little).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.requirements import program, require, root

RUN = f"rt{uuid.uuid4().hex[:5]}"
"""Prefix of every namespace and link this test run makes."""
CLONE_NEWNET = 0x40000000


def require_network_tools() -> None:
    __tracebackhide__ = True
    require(root("a test host (ip netns, iptables)"), program("ip"), program("iptables"))


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=10)


def quietly(*command: str) -> None:
    """A clean-up step: it may find nothing left to remove."""
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        subprocess.run(command, check=False, capture_output=True, timeout=10)


def _free_subnet() -> int:
    used = subprocess.run(
        ["ip", "-4", "-o", "addr"], check=True, capture_output=True, text=True
    ).stdout
    for _ in range(100):
        block = random.randrange(0, 65536, 4)
        if f"10.251.{block // 256}.{block % 256 + 1}/" not in used:
            return block
    raise AssertionError("no free /30 in 10.251.0.0/16")


@dataclass
class Host:
    """One test host: namespace ``name``, reached from here at ``address``."""

    name: str
    outside: str
    inside: str
    gateway: str
    address: str
    rules: list[list[str]] = field(default_factory=list)

    def python(self, *arguments: str) -> list[str]:
        """Arguments for ``python`` that run ``rota`` (``rota.cli.main``) inside this host.

        The child enters the namespace itself (``setns``) before importing anything, so that
        the test's ``Workers`` start, log and stop it like any other worker."""
        code = (
            "import ctypes, os; "
            f"fd = os.open('/run/netns/{self.name}', os.O_RDONLY); "
            f"assert ctypes.CDLL(None, use_errno=True).setns(fd, {CLONE_NEWNET}) == 0; "
            "os.close(fd); from rota.cli import main; main()"
        )
        return ["-c", code, *arguments]

    def iptables(self, *rule: str) -> None:
        """Insert ``rule`` in this host's firewall; removed by ``clear()`` or at teardown."""
        run("ip", "netns", "exec", self.name, "iptables", "-I", *rule)
        self.rules.append(list(rule))

    def clear(self) -> None:
        while self.rules:
            rule = self.rules.pop()
            quietly("ip", "netns", "exec", self.name, "iptables", "-D", *rule)

    @contextlib.contextmanager
    def partitioned(self) -> Iterator[None]:
        """Every packet between this host and the rest dropped, both ways, inside the block."""
        self.iptables("INPUT", "-i", self.inside, "-j", "DROP")
        self.iptables("OUTPUT", "-o", self.inside, "-j", "DROP")
        try:
            yield
        finally:
            self.clear()

    def drop_connection(self, local_port: int) -> None:
        """Blackhole one TCP connection of this host: its packets, by its local port."""
        self.iptables(
            "OUTPUT", "-o", self.inside, "-p", "tcp", "--sport", str(local_port), "-j", "DROP"
        )
        self.iptables(
            "INPUT", "-i", self.inside, "-p", "tcp", "--dport", str(local_port), "-j", "DROP"
        )


@contextlib.contextmanager
def worker_host(index: int) -> Iterator[Host]:
    """A network namespace with a veth pair to this one; removed with its rules and links."""
    require_network_tools()
    block = _free_subnet()
    prefix = f"10.251.{block // 256}"
    host = Host(
        name=f"{RUN}n{index}",
        outside=f"{RUN}h{index}",
        inside=f"{RUN}v{index}",
        gateway=f"{prefix}.{block % 256 + 1}",
        address=f"{prefix}.{block % 256 + 2}",
    )
    try:
        run("ip", "netns", "add", host.name)
        run("ip", "link", "add", host.outside, "type", "veth", "peer", "name", host.inside)
        run("ip", "link", "set", host.inside, "netns", host.name)
        run("ip", "addr", "add", f"{host.gateway}/30", "dev", host.outside)
        run("ip", "link", "set", host.outside, "up")
        inside = ("ip", "netns", "exec", host.name, "ip")
        run(*inside, "addr", "add", f"{host.address}/30", "dev", host.inside)
        run(*inside, "link", "set", host.inside, "up")
        run(*inside, "link", "set", "lo", "up")
        yield host
    finally:
        host.clear()
        quietly("ip", "link", "del", host.outside)
        quietly("ip", "netns", "del", host.name)


def leftovers() -> list[str]:
    """Namespaces and links of this run still present (none once the helpers have ended;
    none without ``ip``, which makes them)."""
    if program("ip") is not None:
        return []
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found = [line.split()[0] for line in names.splitlines() if line.startswith(RUN)]
    found += [line.split(":")[1].strip() for line in links.splitlines() if f" {RUN}" in line]
    return found


def netem_available() -> bool:
    """Whether this kernel takes a ``netem`` qdisc (tried on a namespace's loopback)."""
    name = f"{RUN}probe"
    try:
        run("ip", "netns", "add", name)
        probe = ["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root"]
        result = subprocess.run([*probe, "netem", "delay", "1ms"], capture_output=True, timeout=10)
        return result.returncode == 0
    except (subprocess.SubprocessError, OSError):
        return False
    finally:
        quietly("ip", "netns", "del", name)


def is_statement(chunk: bytes) -> bool:
    """Whether a client's chunk begins a statement: MySQL's ``COM_QUERY`` (after a packet
    header of four bytes) or PostgreSQL's simple query, parse or bind message."""
    return (len(chunk) > 4 and chunk[4] == 0x03) or chunk[:1] in (b"Q", b"P", b"B")


@dataclass
class Link:
    """One connection through the proxy."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    client_port: int
    blackholed: bool = False


class Proxy:
    """An asyncio TCP proxy, on a thread of its own, from ``listen`` to ``target``.

    ``delay`` seconds are added to every answer (server to client), in order; each chunk the
    client sends cuts its connection (RST both ways) with probability ``cut_ratio``;
    ``blackhole_next()`` makes the next statement any client sends the last thing that
    connection ever carries: it is swallowed, nothing more passes either way, and both sockets
    stay open (the kernels still acknowledge, as behind a stuck middlebox).  Only a statement
    (``is_statement``) is taken, one whose sender waits for the answer: a connection's closing
    message (a pool closing a spare one) or its handshake, which a client may send just then,
    would test something else."""

    def __init__(
        self,
        listen: tuple[str, int],
        target: tuple[str, int],
        *,
        delay: float = 0.0,
        cut_ratio: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.target = target
        self.delay = delay
        self.cut_ratio = cut_ratio
        self.random = random.Random(seed)
        self.links: list[Link] = []
        self.connections = 0
        self.chunks = 0
        self.cuts = 0
        self.blackholed: tuple[float, int] | None = None
        """``(time.monotonic(), client port)`` of the connection blackholed, once it is."""
        self._blackhole = False
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(listen, ready), daemon=True)
        self._thread.start()
        if not ready.wait(10) or self._server is None:
            raise AssertionError(f"the proxy could not listen on {listen}")
        self.port: int = int(self._server.sockets[0].getsockname()[1])

    def _serve(self, listen: tuple[str, int], ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._accept, *listen)
            ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        link = Link(writer, up_writer, int(writer.get_extra_info("peername")[1]))
        self.links.append(link)
        self.connections += 1
        answers: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        tasks = [
            asyncio.ensure_future(self._requests(link, reader, up_writer)),
            asyncio.ensure_future(self._answers(link, up_reader, answers)),
            asyncio.ensure_future(self._deliver(link, answers, writer)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for end in (writer, up_writer):
            end.close()

    async def _requests(
        self, link: Link, reader: asyncio.StreamReader, upstream: asyncio.StreamWriter
    ) -> None:
        while data := await reader.read(65536):
            self.chunks += 1
            if link.blackholed:
                continue
            if self._blackhole and is_statement(data):
                self._blackhole = False
                link.blackholed = True
                self.blackholed = (time.monotonic(), link.client_port)
                continue
            if self.cut_ratio and self.random.random() < self.cut_ratio:
                self.cuts += 1
                _reset(link.client)
                _reset(link.server)
                return
            upstream.write(data)
            await upstream.drain()

    async def _answers(
        self,
        link: Link,
        reader: asyncio.StreamReader,
        answers: asyncio.Queue[tuple[float, bytes]],
    ) -> None:
        while data := await reader.read(65536):
            if not link.blackholed:
                answers.put_nowait((self._loop.time() + self.delay, data))
        # The server closed: hand on what is queued, then close.
        await answers.join()

    async def _deliver(
        self, link: Link, answers: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter
    ) -> None:
        while True:
            due, data = await answers.get()
            wait = due - self._loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not link.blackholed:
                writer.write(data)
                await writer.drain()
            answers.task_done()

    def blackhole_next(self) -> None:
        self._loop.call_soon_threadsafe(setattr, self, "_blackhole", True)

    def close(self) -> None:
        """Reset every connection, end every task, then the loop and its thread."""

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for link in self.links:
                _reset(link.client)
                _reset(link.server)
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0.05)  # the aborted transports' connection_lost callbacks

        if self._loop.is_running():
            done = asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
            with contextlib.suppress(Exception):
                done.result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST, as a dropped connection does, not a polite FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextlib.contextmanager
def proxy(
    listen: tuple[str, int],
    target: tuple[str, int],
    *,
    delay: float = 0.0,
    cut_ratio: float = 0.0,
    seed: int = 0,
) -> Iterator[Proxy]:
    forwarder = Proxy(listen, target, delay=delay, cut_ratio=cut_ratio, seed=seed)
    try:
        yield forwarder
    finally:
        forwarder.close()
