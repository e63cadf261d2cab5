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


class FakeTime:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordedPauses(threading.Event):
    """A stop event whose waits return at once, remembering how long each would have been and
    moving ``time`` on by as much."""

    def __init__(self, stop_after: int | None = None, time: FakeTime | None = None) -> None:
        super().__init__()
        self.pauses: list[float] = []
        self.stop_after = stop_after
        self.time = time or FakeTime()

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.pauses.append(timeout)
        self.time.now += timeout
        return self.stop_after is not None and len(self.pauses) >= self.stop_after


class Flaky:
    """Fails with ``error`` ``failures`` times, then answers; each attempt takes ``takes``
    seconds of ``time``."""

    def __init__(
        self,
        failures: int,
        error: StoreError | None = None,
        time: FakeTime | None = None,
        takes: float = 0.0,
    ) -> None:
        self.calls = 0
        self.failures = failures
        self.error = error or TransientStoreError("connection refused")
        self.time, self.takes = time or FakeTime(), takes
        self.at: list[float] = []

    def __call__(self) -> str:
        self.calls += 1
        self.at.append(self.time.now)
        self.time.now += self.takes
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


def test_the_last_pause_is_cut_to_the_deadline_and_the_wait_gives_up_there() -> None:
    time = FakeTime()
    attempt, pauses = Flaky(failures=100, time=time), RecordedPauses(time=time)
    with pytest.raises(DatabaseUnavailable, match=r"after 30\.0 s: connection refused"):
        DatabaseWait("test database", 30.0, EventLog(), monotonic=time).retry(attempt, pauses)
    # 0.2 + 0.4 + ... + 6.4 + 10 = 22.6 s; the next 10 s pause would end past the deadline,
    # so it is cut to 7.4 s and the last attempt is made at the deadline, not at 22.6 s.
    assert pauses.pauses[:-1] == [0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0]
    assert pauses.pauses[-1] == pytest.approx(7.4)
    assert attempt.at[-1] - attempt.at[0] == pytest.approx(30.0)


def test_giving_up_states_the_time_the_wait_really_took() -> None:
    time = FakeTime()
    attempt = Flaky(failures=100, time=time, takes=4.0)  # each connect attempt times out
    pauses = RecordedPauses(time=time)
    with pytest.raises(DatabaseUnavailable, match=r"after 30\.2 s: connection refused"):
        DatabaseWait("test database", 30.0, EventLog(), monotonic=time).retry(attempt, pauses)
    # Tries at 0, 4.2, 8.6, 13.4, 19 and 26.2 s; the last one ends 0.2 s past the deadline.
    assert [round(at - attempt.at[0], 1) for at in attempt.at] == [0, 4.2, 8.6, 13.4, 19, 26.2]


def test_setting_stop_ends_the_wait_at_the_next_pause_with_the_last_error() -> None:
    attempt, pauses = Flaky(failures=100), RecordedPauses(stop_after=2)
    with pytest.raises(TransientStoreError, match="connection refused"):
        DatabaseWait("test database", None, EventLog()).retry(attempt, pauses)
    assert attempt.calls == 2
