"""Waiting for the database: ``DatabaseWait.retry`` is the one loop that does it, for the calls
(``connect_timeout``), for ``start()`` and for ``rota worker`` (for ever).

Its pauses go through the ``stop`` event, so a test hands it an event that records them and
never sleeps, and ``start()`` cancelled mid-wait ends the waiting thread by setting it.
"""

from __future__ import annotations

import logging
import threading

import pytest

from rota.errors import DatabaseUnavailable, StoreError, TransientStoreError
from rota.observe.events import EventLog
from rota.runtime.services.readiness import DatabaseWait


class RecordedPauses(threading.Event):
    """A stop event whose waits return at once, remembering how long each would have been."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.pauses: list[float] = []
        self.stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.pauses.append(timeout)
        return self.stop_after is not None and len(self.pauses) >= self.stop_after


class Flaky:
    """Fails with ``error`` ``failures`` times, then answers."""

    def __init__(self, failures: int, error: StoreError | None = None) -> None:
        self.calls = 0
        self.failures = failures
        self.error = error or TransientStoreError("connection refused")

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "connected"


def test_transient_failures_are_retried_with_doubling_pauses_then_the_answer_returned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempt, pauses = Flaky(failures=4), RecordedPauses()
    with caplog.at_level(logging.INFO, logger="rota"):
        assert DatabaseWait("test database", None, EventLog()).retry(attempt, pauses) == "connected"
    assert attempt.calls == 5
    assert pauses.pauses == [0.2, 0.4, 0.8, 1.6]
    events = [getattr(record, "event", None) for record in caplog.records]
    assert events == ["db.unavailable"] * 4 + ["db.available"]


def test_the_pause_never_grows_past_ten_seconds() -> None:
    pauses = RecordedPauses()
    DatabaseWait("test database", None, EventLog()).retry(Flaky(failures=12), pauses)
    assert max(pauses.pauses) == 10.0 and pauses.pauses[-1] == 10.0


def test_a_permanent_error_is_raised_at_once_without_a_pause() -> None:
    attempt, pauses = Flaky(failures=1, error=StoreError("access denied")), RecordedPauses()
    with pytest.raises(StoreError, match="access denied") as info:
        DatabaseWait("test database", None, EventLog()).retry(attempt, pauses)
    assert not isinstance(info.value, TransientStoreError)
    assert attempt.calls == 1 and pauses.pauses == []


def test_a_deadline_ends_the_wait_with_database_unavailable() -> None:
    attempt, pauses = Flaky(failures=100), RecordedPauses()
    with pytest.raises(DatabaseUnavailable, match=r"after 1\.0 s: connection refused"):
        DatabaseWait("test database", 1.0, EventLog()).retry(attempt, pauses)
    # The pauses here take no time, so the wait gives up at the first pause that alone would
    # end past the deadline: 1.6 s, after the fourth failure.
    assert pauses.pauses == [0.2, 0.4, 0.8] and attempt.calls == 4


def test_setting_stop_ends_the_wait_at_the_next_pause_with_the_last_error() -> None:
    attempt, pauses = Flaky(failures=100), RecordedPauses(stop_after=2)
    with pytest.raises(TransientStoreError, match="connection refused"):
        DatabaseWait("test database", None, EventLog()).retry(attempt, pauses)
    assert attempt.calls == 2
