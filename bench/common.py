"""What every benchmark shares: the result record, the run configuration and small measures."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

MYSQL_URL = os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Config:
    """One benchmark run: which backends, how big, and where servers are."""

    backends: tuple[str, ...] = ("sqlite", "mariadb", "postgres")
    jobs: int = 20_000
    quick: bool = False
    mysql_url: str = MYSQL_URL
    postgres_url: str = POSTGRES_URL
    workdir: str = "/tmp/rota-bench"

    def url(self, backend: str) -> str:
        if backend == "mariadb":
            return self.mysql_url
        if backend == "postgres":
            return self.postgres_url
        os.makedirs(self.workdir, exist_ok=True)
        return f"sqlite:///{self.workdir}/bench-{os.getpid()}-{time.monotonic_ns()}.db"


@dataclass(frozen=True)
class Result:
    """One figure: ``system`` on ``backend`` in ``scenario`` with ``params`` gave ``value``."""

    scenario: str
    system: str
    backend: str
    metric: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(values),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
    }


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as took: ...`` then ``took[0]`` is the elapsed seconds."""
    elapsed: list[float] = []
    start = time.perf_counter()
    try:
        yield elapsed
    finally:
        elapsed.append(time.perf_counter() - start)


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a live process (VmHWM), in MiB."""
    return _status_kb(pid, "VmHWM") / 1024


def rss_mb(pid: int) -> float:
    return _status_kb(pid, "VmRSS") / 1024


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU the live processes ``pids`` used so far (``/proc/<pid>/stat``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            # After the command's name, which may hold spaces: utime and stime are fields 14, 15.
            fields = stat.read().rpartition(")")[2].split()
        used += int(fields[11]) + int(fields[12])
    return used / ticks


def _status_kb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{key}:"):
                return float(line.split()[1])
    raise LookupError(f"{key} not in /proc/{pid}/status")
