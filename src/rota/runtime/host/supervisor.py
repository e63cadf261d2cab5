"""Run N worker processes and keep them running: a dead one is replaced, a signal stops all.

Each child is an ordinary ``rota worker`` process, so it has its own event loop, connections
and lease heartbeats; the supervisor only watches exit codes.  Children that keep dying (more
than ``max_restarts`` within ``window`` seconds) end the supervisor with exit code 1 rather
than restarting forever.

A child the supervisor stops exits 0 however far its start-up had come: one still importing
the application stops at once (``rota worker`` treats a signal before its worker's own handlers
as a clean stop), and one the SIGTERM ended outright, before rota could install any handler,
stopped as asked.

Every child holds the read end of a pipe whose only write end is the supervisor's (the
*lifeline*).  However the supervisor ends, SIGKILL included, the kernel closes that end; each
child reads end-of-file and stops as if it had been sent SIGTERM, so no worker is orphaned and
none vanishes mid-job.  A pipe works wherever ``os.pipe`` does, unlike Linux's
``PR_SET_PDEATHSIG``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from types import FrameType

from rota.config import DEFAULT_GRACE
from rota.core.events import EventName
from rota.environment import SUPERVISOR_FD
from rota.observe.events import EventLog

KILL_AFTER_GRACE = 10.0
logger = logging.getLogger("rota.supervisor")
events = EventLog(logger)
"""The supervisor process's own: it runs no worker, and no hook of the application's hears
it."""


def supervise(
    command: Sequence[str],
    processes: int,
    *,
    grace: float = DEFAULT_GRACE,
    max_restarts: int = 10,
    window: float = 60.0,
    poll: float = 0.2,
) -> int:
    """Run ``processes`` copies of ``command`` until SIGINT/SIGTERM; return the exit code.

    A second signal is passed on to the children, which then stop without waiting out
    ``grace``."""
    signals: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        signals.append(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    lifeline, held = os.pipe()
    restarts: deque[float] = deque()
    failed = False
    try:
        children = [_spawn(command, lifeline) for _ in range(processes)]
        while not signals and not failed:
            for index, child in enumerate(children):
                code = child.poll()
                if code is None:
                    continue
                now = time.monotonic()
                restarts.append(now)
                while restarts and restarts[0] < now - window:
                    restarts.popleft()
                if len(restarts) > max_restarts:
                    events.log(
                        logger,
                        EventName.SUPERVISOR_GAVE_UP,
                        logging.ERROR,
                        "worker processes keep exiting (%d restarts in %.0f s); giving up",
                        len(restarts),
                        window,
                    )
                    failed = True
                    break
                events.log(
                    logger,
                    EventName.SUPERVISOR_RESTARTED,
                    logging.WARNING,
                    "worker process %d exited with code %s; starting another",
                    child.pid,
                    code,
                    pid=child.pid,
                    code=code,
                )
                children[index] = _spawn(command, lifeline)
            time.sleep(poll)
        if signals:
            events.log(
                logger,
                EventName.SUPERVISOR_STOPPING,
                logging.INFO,
                "stopping %d worker process(es): waiting up to %g s for running jobs; send the "
                "signal again to stop now",
                len(children),
                grace,
            )
        codes = _stop(children, grace, signals, poll)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(lifeline)
        os.close(held)
    return 1 if failed or any(code != 0 for code in codes) else 0


def watch_supervisor(worker_events: EventLog) -> None:
    """In a supervised worker, stop as if SIGTERMed once the supervisor is gone (announced on
    the worker's ``worker_events``).

    The variable is removed so that processes this worker starts do not watch a pipe they do
    not hold."""
    fd = os.environ.pop(SUPERVISOR_FD, None)
    if fd is not None and fd.isdigit():
        threading.Thread(
            target=_stop_at_end_of_file,
            args=(int(fd), worker_events),
            name="rota-lifeline",
            daemon=True,
        ).start()


def _stop_at_end_of_file(fd: int, worker_events: EventLog) -> None:
    try:
        while os.read(fd, 1):  # the supervisor never writes: this returns at end of file only
            pass
    except OSError:
        return
    worker_events.log(
        logger,
        EventName.SUPERVISOR_LOST,
        logging.WARNING,
        "the supervisor is gone; stopping as if sent SIGTERM",
    )
    os.kill(os.getpid(), signal.SIGTERM)


def _spawn(command: Sequence[str], lifeline: int) -> subprocess.Popen[bytes]:
    # A session of its own: a Ctrl-C reaches the supervisor only, which then stops every child.
    child = subprocess.Popen(
        list(command),
        start_new_session=True,
        pass_fds=(lifeline,),
        env={**os.environ, SUPERVISOR_FD: str(lifeline)},
    )
    events.log(
        logger, EventName.SUPERVISOR_STARTED, logging.INFO, "started worker process %d", child.pid
    )
    return child


def _stop(
    children: list[subprocess.Popen[bytes]], grace: float, signals: list[int], poll: float
) -> list[int]:
    """SIGTERM every child and wait; pass on each further signal; SIGKILL long after grace."""
    _signal_all(children)
    forwarded = len(signals)
    deadline = time.monotonic() + grace + KILL_AFTER_GRACE
    while any(child.poll() is None for child in children) and time.monotonic() < deadline:
        if len(signals) > forwarded:
            forwarded = len(signals)
            events.log(
                logger,
                EventName.SUPERVISOR_GRACE_SKIPPED,
                logging.WARNING,
                "stopping now: passing the signal on to the worker processes",
            )
            _signal_all(children)
        time.sleep(poll)
    for child in children:
        if child.poll() is None:
            child.kill()
    return [stopped(child.wait()) for child in children]


def stopped(code: int) -> int:
    """A child's exit code once it was sent SIGTERM: one the signal itself ended (still
    starting its interpreter, before any handler of rota's was installed) stopped as asked.
    Killed after the grace, or exiting 1, it did not."""
    return 0 if code == -signal.SIGTERM else code


def _signal_all(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
