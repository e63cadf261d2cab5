"""What the worker apps of the process tests share: a ``Rota`` configured from the environment
the test gives each worker process, and a marks file only that process appends to.

``ROTA_TEST_URL``, ``ROTA_TEST_PREFIX``, ``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL`` and
``ROTA_TEST_CONCURRENCY`` configure the ``Rota``; marks go to ``$ROTA_TEST_DIR/<stem>.<pid>``
through an ``O_APPEND`` descriptor, so that each ``os.write`` of a line survives a SIGKILL of
its process whole.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rota import Rota


def rota_from_environment(concurrency: int = 10, **options: Any) -> Rota:
    """``concurrency`` unless ``ROTA_TEST_CONCURRENCY`` says otherwise."""
    return Rota(
        os.environ["ROTA_TEST_URL"],
        table_prefix=os.environ["ROTA_TEST_PREFIX"],
        lease_seconds=float(os.environ.get("ROTA_TEST_LEASE", "2")),
        poll_interval=float(os.environ.get("ROTA_TEST_POLL", "0.2")),
        concurrency=int(os.environ.get("ROTA_TEST_CONCURRENCY", str(concurrency))),
        connect_timeout=10,
        **options,
    )


def marks_file(stem: str) -> int:
    """The descriptor of this process's own marks file."""
    path = Path(os.environ["ROTA_TEST_DIR"]) / f"{stem}.{os.getpid()}"
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
