"""The report writer keeps a batch held while it is being written: the heartbeat renews the
lease of a job whose outcome is on its way to the database, so a slow write can never let the
lease lapse and the job be rescued and run again elsewhere."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from rota.core.model import JobState, ProgressReport
from rota.core.transitions import Transition
from rota.runtime.reports import Reports
from rota.runtime.timer import Timer
from rota.store.base import Store
from rota.testing import FakeClock
from tests.conftest import START


class SlowStore:
    """A store whose ``complete`` waits until the test lets it finish."""

    def __init__(self) -> None:
        self.writing = threading.Event()
        self.finish = threading.Event()

    def complete(
        self,
        worker_id: str,
        batch: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> int:
        self.writing.set()
        self.finish.wait(10)
        return len(batch)


def test_a_batch_being_written_stays_held_until_it_is_written() -> None:
    async def scenario() -> list[list[int]]:
        store, clock = SlowStore(), FakeClock(START)
        reports = Reports("w", cast(Store, store), asyncio.to_thread, clock, Timer(clock), 1.0)
        reports.add(Transition(7, JobState.RUNNING, JobState.SUCCEEDED, 1, START))
        seen = [reports.held()]
        flushing = asyncio.ensure_future(reports.flush())
        await asyncio.to_thread(store.writing.wait, 10)
        reports.add(Transition(8, JobState.RUNNING, JobState.SUCCEEDED, 1, START))
        seen.append(sorted(reports.held()))
        store.finish.set()
        await flushing
        seen.append(reports.held())
        return seen

    held: Any = asyncio.run(scenario())
    assert held == [[7], [7, 8], [8]]
