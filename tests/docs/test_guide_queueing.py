"""The guide's Tasks and Queueing examples, run as they stand there: every job they queue must
succeed at its first attempt (an example whose arguments did not fit its task queued jobs that
failed and retried for ever)."""

from __future__ import annotations

import ast
import asyncio
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Integer, MetaData, Table, create_engine

from rota import JobContext, JobState, Rota
from rota.testing import FakeClock

GUIDE = (Path(__file__).parents[2] / "docs" / "guide.md").read_text()
NOW = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def blocks(section: str) -> list[str]:
    """The Python code blocks of a guide section (up to the next heading of its level)."""
    body = GUIDE.partition(f"\n## {section}\n")[2].split("\n## ")[0]
    return [part.split("```")[0] for part in re.split(r"```python[^\n]*\n", body)[1:]]


def test_the_guide_tasks_and_queueing_examples_queue_jobs_that_succeed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'guide.db'}"
    clock = FakeClock(NOW)
    engine = create_engine(url)
    orders = Table("orders", MetaData(), Column("id", Integer, primary_key=True))
    orders.create(engine)
    namespace: dict[str, Any] = {
        "Rota": lambda **options: Rota(url, clock=clock, **options),
        "tomorrow_9am": NOW + timedelta(days=1),
        "recipients": ["a@example.com", "b@example.com"],
        "engine": engine,
        "orders": orders,
    }
    tasks = blocks("Tasks")[0]
    exec(tasks.replace("from rota import JobContext, Rota\n", ""), namespace)
    rota: Rota = namespace["rota"]

    @rota.task
    def send_invoice(ctx: JobContext, order_id: int) -> None: ...

    namespace["send_invoice"] = send_invoice
    single, many = blocks("Queueing")
    code = compile(single, "guide.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    asyncio.run(eval(code, namespace))
    exec(many, namespace)

    clock.advance(timedelta(days=2))
    result = rota.drain()
    jobs = rota.store.reads.jobs(limit=None)
    assert len(jobs) == 9 and {job.state for job in jobs} == {JobState.SUCCEEDED}
    assert (result.succeeded, result.failed, result.retried) == (9, 0, 0)
    assert all(job.attempt == 1 for job in jobs)
    rota.store.dispose()
    engine.dispose()
