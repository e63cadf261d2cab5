"""The dashboard served by a real uvicorn, for tests that need what a test client skips.

Starlette's ``TestClient`` percent-decodes a request's path twice (httpx decodes it, then the
client again), so a name holding ``%41`` would reach the app as ``A``; uvicorn decodes it
once, as every server does.  The browser test and the URL-encoding tests go through here.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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
