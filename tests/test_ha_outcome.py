"""scripts/ha/outcome.py, the judge of a failover run: what it counts as lost, duplicated, a
double claim and a duplicated tick, from hand-made marks and final rows."""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

from rota import Job, JobState

SCRIPT = Path(__file__).parents[1] / "scripts" / "ha" / "outcome.py"
T0 = datetime(2026, 3, 2, 12, tzinfo=timezone.utc)


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rota_ha_outcome", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def job(job_id: int, n: int, state: JobState = JobState.SUCCEEDED) -> Job:
    return Job(job_id, "record", "default", (n,), {}, state, 1, 4, 0, T0, T0)


def tick(job_id: int, at: datetime) -> Job:
    return Job(
        job_id,
        "tick",
        "default",
        (),
        {},
        JobState.SUCCEEDED,
        1,
        4,
        0,
        at,
        at,
        None,
        None,
        "tick",
        at,
    )


def test_the_judge_tells_lost_reruns_double_claims_and_duplicated_ticks_apart() -> None:
    outcome = load()
    start = T0.timestamp()
    minute = start + 60
    run = outcome.Run(
        topology="t",
        acknowledged={0: 1, 1: 2, 2: 3, 3: 4},
        ticks_from=start,
        ended=start + 150,
        killed_at=start + 10,
        recovered_at=start + 12,
        notes={},
    )
    Mark = outcome.Mark
    marks = [
        Mark("job", 0, 1, 1, 100, start + 1),
        Mark("job", 1, 2, 1, 100, start + 2),  # rerun after its lease: attempt 2
        Mark("job", 1, 2, 2, 200, start + 20),
        Mark("job", 2, 3, 1, 100, start + 3),  # one attempt run by two workers
        Mark("job", 2, 3, 1, 200, start + 13),
        Mark("tick", int(minute), 9, 1, 100, minute),
        Mark("tick", int(minute), 9, 2, 200, minute + 7),  # rerun after its lease
    ]
    final = [job(1, 0), job(2, 1), job(3, 2), tick(9, datetime.fromtimestamp(minute, timezone.utc))]
    judged = outcome.judge(run, marks, final)
    assert (judged.acknowledged, judged.succeeded, judged.lost) == (4, 3, 1), "job 3 is gone"
    assert judged.duplicated == 2 and judged.details["extra_executions"] == 2
    assert judged.details["double_claims"] == 1
    assert judged.details["double_claims_sample"] == [("job", 2)]
    assert (judged.ticks_expected, judged.ticks_ran, judged.ticks_duplicated) == (2, 1, 1)
    assert judged.resume_seconds == 3.0, "the first start after the failover was over"
