"""The latest progress of each running attempt, between handlers and the heartbeat.

Handlers post from any thread (a sync handler's, an isolated child's reader on the event loop)
as often as they like; each post replaces the attempt's previous one.  The heartbeat takes what
was posted since it last ran and writes it in its own transaction, so progress costs at most
one write per job per heartbeat, however often it is reported.  Values are keyed by attempt as
well as job: a timed-out attempt's thread that reports on cannot overwrite the next attempt's
value (and the store writes a value only while its attempt still holds the job).

An isolated handler's child process reports over a pipe of its own: ``child_reporter`` sends
each value, ``ProgressRelay`` reads them in the worker and posts them as the thread would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Collection, Iterable
from multiprocessing.connection import Connection

from rota.core.model import Progress, ProgressReport
from rota.errors import RotaError


class ProgressBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[tuple[int, int], Progress] = {}

    def reporter(self, job_id: int, attempt: int) -> Callable[[Progress], None]:
        """What a ``JobContext`` of that attempt hands its values to."""

        def post(progress: Progress) -> None:
            with self._lock:
                self._latest[job_id, attempt] = progress

        return post

    def take(self, held: Collection[int]) -> list[ProgressReport]:
        """Everything posted since the last ``take``, for the jobs in ``held``, by job id; the
        values of jobs no longer held are dropped (their attempt is over)."""
        with self._lock:
            latest, self._latest = self._latest, {}
        return sorted(
            (
                ProgressReport(job_id, attempt, progress)
                for (job_id, attempt), progress in latest.items()
                if job_id in held
            ),
            key=lambda report: (report.job_id, report.attempt),
        )

    def take_ended(self, job_ids: Collection[int]) -> list[ProgressReport]:
        """What was posted since the last ``take`` for the jobs in ``job_ids``, whose attempts
        have ended: written with their outcomes, and no longer the heartbeat's to write."""
        with self._lock:
            ended = [key for key in self._latest if key[0] in job_ids]
            reports = [ProgressReport(*key, self._latest.pop(key)) for key in sorted(ended)]
        return reports

    def put_back(self, reports: Iterable[ProgressReport]) -> None:
        """Return values a failed heartbeat did not write, unless a newer one came meanwhile."""
        with self._lock:
            for report in reports:
                self._latest.setdefault((report.job_id, report.attempt), report.progress)


# -- across an isolated child's pipe (``isolation="process"``) ------------------------------


def child_reporter(pipe: Connection) -> Callable[[Progress], None]:
    """In the child: send each value to the parent, one small message each (a pipe write of
    under ``PIPE_BUF`` bytes, never interleaved), under a lock for handlers' own threads."""
    lock = threading.Lock()

    def send(progress: Progress) -> None:
        message = json.dumps([progress.fraction, progress.note]).encode()
        with lock, contextlib.suppress(OSError):
            pipe.send_bytes(message)

    return send


class ProgressRelay:
    """In the worker: read an isolated child's values as they come, on the event loop, and
    report them to the attempt's ``JobContext``, whose board the heartbeat writes from."""

    def __init__(self, pipe: Connection, report: Callable[[float, str | None], None]) -> None:
        self._pipe = pipe
        self._report = report
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._pipe.fileno(), self._read)

    def finish(self) -> None:
        """Read what the child sent before it exited, then stop watching the pipe."""
        if self._loop is not None:
            self._read()
            self._stop()

    def _read(self) -> None:
        try:
            while self._pipe.poll():
                fraction, note = json.loads(self._pipe.recv_bytes())
                with contextlib.suppress(RotaError):
                    self._report(fraction, note)
        except (EOFError, OSError, ValueError, TypeError):
            self._stop()  # the child exited (or wrote nonsense): nothing more will come

    def _stop(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._pipe.fileno())
            self._loop = None
