"""What the primary/replica topologies share: a TCP forwarder they steer, and process helpers.

The ``Forwarder`` plays two parts. As the workers' one writer endpoint (MariaDB), it is the
virtual IP or proxy a failover tool repoints: ``repoint`` sends new connections to the new
primary and drops the old ones. As the replication link, it adds a one-way ``delay`` (a replica
in another zone is milliseconds away, not microseconds as on one machine) and ``cut`` drops
whatever it holds at the kill, as the loss of the primary's host loses what was on the wire;
without them a ``kill -9`` on one machine lets the kernel deliver every byte the primary had
written, and asynchronous replication would look safer than it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from workload import Topology

ROOT = Path("/tmp/rota-ha")
"""Every datadir and log of these topologies lives under here (Galera's too)."""
LINK_DELAY = 0.005
"""One-way latency of the replication link: 10 ms round trip, two zones of one region."""
REMOTE_DELAY = 0.04
"""One-way latency to a replica in another region (80 ms round trip): the ``-remote`` runs."""
CHUNK = 65536


class Forwarder:
    """Relays ``127.0.0.1:listen`` to ``127.0.0.1:target`` from a thread of its own."""

    def __init__(self, listen: int, target: int | None, delay: float = 0.0) -> None:
        self.listen = listen
        self.target = target
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        self.transports: set[asyncio.WriteTransport] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.Server | None = None

    def __enter__(self) -> Forwarder:
        self.thread.start()
        self.server = self._call(asyncio.start_server(self._relay, "127.0.0.1", self.listen))
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, coroutine: Coroutine[object, object, asyncio.Server]) -> asyncio.Server:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    def repoint(self, target: int | None) -> None:
        """New connections go to ``target`` (``None``: refused); open ones are dropped."""
        self.target = target
        self.cut()

    def cut(self) -> None:
        """Drop every open connection now, and the bytes still queued in it."""

        def abort_all() -> None:
            for transport in list(self.transports):
                transport.abort()
            self.transports.clear()

        self.loop.call_soon_threadsafe(abort_all)

    def close(self) -> None:
        if not self.thread.is_alive():
            return
        self.cut()
        if self.server is not None:
            self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.target is None:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        ends = (writer.transport, up_writer.transport)
        self.transports.update(ends)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        for transport in ends:
            self.transports.discard(transport)
            transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy until either end closes; with a delay, each chunk leaves ``delay`` after it
        arrived, in order, so latency grows but throughput does not shrink."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((time.monotonic() + self.delay, data))
        except OSError:
            pass
        queue.put_nowait((0.0, b""))
        with contextlib.suppress(OSError):
            await sender
        writer.transport.abort()


class Servers(Protocol):
    """What a topology's ``Pair`` of servers offers ``running``."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Servers)


@contextlib.contextmanager
def running(servers: S, topology: Callable[[S], Topology]) -> Iterator[Topology]:
    """``servers`` started, as the ``Topology`` made of them, until the block ends; then
    stopped and removed, whatever happened (a failed start included)."""
    try:
        servers.start()
        yield topology(servers)
    finally:
        servers.stop()


def wait_for(check: Callable[[], object], timeout: float, what: str, every: float = 0.1) -> None:
    """Until ``check()`` is true; a ``TimeoutError`` naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout:.0f} s")
        time.sleep(every)


def free(*ports: int) -> None:
    """Fail early, naming them, if any of ``ports`` is taken (a run that was not cleaned up)."""
    busy = [port for port in ports if listening(port)]
    if busy:
        raise RuntimeError(f"ports already in use: {busy}; run scripts/ha/run --cleanup")


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_until_listening(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"server for port {port} exited with {process.returncode}")
        return listening(port)

    wait_for(up, timeout, f"a server listening on {port}")


def quietly(command: Sequence[str], stdin: str | None = None, user: str | None = None) -> str:
    """Run ``command`` (as ``user``); its output, or a ``RuntimeError`` holding it."""
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, check=False, user=user
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr or done.stdout}")
    return done.stdout


def kill(process: subprocess.Popen[bytes]) -> float:
    """SIGKILL the process (its whole session, for servers that fork); the kill's wall time."""
    killed = time.time()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return killed


def end(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a server this run started, if it still runs: SIGTERM, then SIGKILL after 20 s."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        kill(process)


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
