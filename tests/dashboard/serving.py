"""The dashboard served by a real uvicorn, for tests that need what a test client skips.

Starlette's ``TestClient`` percent-decodes a request's path twice (httpx decodes it, then the
client again), so a name holding ``%41`` would reach the app as ``A``; uvicorn decodes it
once, as every server does.  The browser test and the URL-encoding tests go through here.
``exchange`` sends a request written byte for byte, so a test can send headers (a hostile
``Host``, none at all, two of them) that an HTTP client would correct or refuse to send.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@contextmanager
def serving(app: Any, probe: str = "/") -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free local port in a thread; yield its base URL once
    ``probe`` answers 200."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"{base}{probe}", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:  # not listening yet, or a first answer slower than the probe's 1 s
                pass
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"the dashboard did not answer at {base} within 10 s")
            time.sleep(0.05)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    """Lower-case names; the last value of a repeated header."""
    body: bytes


def exchange(
    base: str,
    method: str,
    target: str,
    headers: list[tuple[str, bytes]],
    body: bytes = b"",
    version: str = "HTTP/1.1",
) -> Answer:
    """Send ``method target version`` with ``headers`` exactly as given (no ``Host`` is added)
    and ``body``, on a connection of its own, to the server at ``base``; read its whole answer."""
    address = urlsplit(base).hostname, urlsplit(base).port or 80
    lines = [f"{method} {target} {version}".encode()]
    lines += [name.encode() + b": " + value for name, value in headers]
    lines += [b"Connection: close", f"Content-Length: {len(body)}".encode()]
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, content = received.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    named = (field.partition(":") for field in fields)
    answer = {name.strip().lower(): value.strip() for name, _, value in named}
    return Answer(int(status_line.split()[1]), answer, content)
