"""Handler threads: as many handlers as slots run at once, and none waits behind another."""

from __future__ import annotations

import threading

from rota.runtime.worker.threads import HandlerThreads


def test_every_submitted_handler_starts_while_the_others_still_run() -> None:
    """A thread counted idle while it takes one handler must not leave the next one queued
    with no thread to run it (the race that stalled the second of two quick submits)."""
    for round_ in range(300):
        size = 2 + round_ % 3
        threads = HandlerThreads(size, f"t{round_}")
        started = threading.Barrier(size + 1, timeout=5)
        release = threading.Event()

        def handler(barrier: threading.Barrier = started, gate: threading.Event = release) -> None:
            barrier.wait()
            gate.wait(5)

        futures = [threads.submit(handler) for _ in range(size)]
        started.wait()  # raises BrokenBarrierError if one handler never starts
        release.set()
        for future in futures:
            future.result(timeout=5)
        threads.shutdown()


def test_results_and_exceptions_come_back_through_the_future() -> None:
    threads = HandlerThreads(1, "t")
    assert threads.submit(lambda: 42).result(timeout=5) == 42
    failing = threads.submit(lambda: 1 / 0)
    assert isinstance(failing.exception(timeout=5), ZeroDivisionError)
    threads.shutdown()
