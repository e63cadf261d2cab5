"""What a failover did to the workload: counted from the marks every execution left and from
the final state of the (new) writer, read through rota's public API.

The marks are the truth for "it ran" (a line is written before the job's work, and survives
anything the database forgets); the database is the truth for "it is recorded as done". A job
is identified by the producer's sequence number ``n``, not its id: after an asynchronous
failover the new primary hands the ids of lost jobs to new ones.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rota import Job, JobState

TICK_SLACK = 3.0
"""A tick due less than this before the end of the run may not have run yet: not expected."""


@dataclass(frozen=True)
class Mark:
    kind: str
    key: int
    """``n`` for a job, the tick's scheduled time (unix seconds) for a tick."""
    job_id: int
    attempt: int
    pid: int
    at: float


@dataclass
class Outcome:
    """One row of the table; ``details`` holds what only the JSON shows."""

    topology: str
    acknowledged: int = 0
    succeeded: int = 0
    lost: int = 0
    duplicated: int = 0
    ticks_expected: int = 0
    ticks_ran: int = 0
    ticks_duplicated: int = 0
    resume_seconds: float | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_marks(directory: Path) -> list[Mark]:
    marks = []
    for path in sorted(directory.glob("marks.*")):
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) != 6:
                continue  # a line cut by a crash of the writing process; never seen so far
            kind, key, job_id, attempt, pid, at = fields
            marks.append(Mark(kind, int(key), int(job_id), int(attempt), int(pid), float(at)))
    return marks


def minute_ticks(start: float, end: float) -> list[int]:
    """The ``* * * * *`` ticks after ``start`` that were due long enough before ``end``."""
    first = math.floor(start / 60) * 60 + 60
    return list(range(first, int(end - TICK_SLACK) + 1, 60))


@dataclass(frozen=True)
class Run:
    """What the harness observed of one run, beside the marks and the final database."""

    topology: str
    acknowledged: Mapping[int, int]
    """Sequence number → the id ``queue_many`` returned, for every acknowledged job."""
    ticks_from: float
    """When every worker was up (the schedule existed): later minutes are expected ticks."""
    ended: float
    killed_at: float | None
    recovered_at: float | None
    """When the topology's failover callback returned (the writer promoted and reachable)."""
    notes: Mapping[str, Any]


def judge(run: Run, marks: Iterable[Mark], final: Iterable[Job]) -> Outcome:
    """Count acknowledged, succeeded, lost and duplicated jobs and ticks.

    A duplicate is a job or tick that ran more than once: at-least-once allows a run again
    after a lease expired (a later attempt, or the same one given back at a shutdown).  A
    *double claim*, one attempt of one job id run twice, means two workers held the same
    claim at once: rota's claim never allows it, but a promoted asynchronous replica that
    never received a committed claim hands the job out a second time.  It is counted apart."""
    executions: dict[tuple[str, int], list[Mark]] = defaultdict(list)
    marks_seen = list(marks)
    for mark in marks_seen:
        executions[mark.kind, mark.key].append(mark)
    rows: dict[int, list[Job]] = defaultdict(list)
    tick_rows: dict[int, list[Job]] = defaultdict(list)
    by_id: dict[int, Job] = {}
    for job in final:
        by_id[job.id] = job
        if job.task == "record" and job.args:
            rows[int(job.args[0])].append(job)
        elif job.task == "tick" and job.scheduled_at is not None:
            tick_rows[int(job.scheduled_at.timestamp())].append(job)
    done = {n for n, jobs in rows.items() if any(j.state is JobState.SUCCEEDED for j in jobs)}
    acked = set(run.acknowledged)
    lost = sorted(acked - done)
    twice = {n: len(m) for (kind, n), m in executions.items() if kind == "job" and len(m) > 1}
    attempts = Counter((mark.kind, mark.key, mark.job_id, mark.attempt) for mark in marks_seen)
    double_claims = sorted((kind, key) for (kind, key, _, _), runs in attempts.items() if runs > 1)
    expected = minute_ticks(run.ticks_from, run.ended)
    ran = [t for t in expected if executions.get(("tick", t))]
    tick_runs = {t: len(executions[("tick", t)]) for t in ran}
    reused = [
        n
        for n, job_id in run.acknowledged.items()
        if job_id in by_id and by_id[job_id].task == "record" and by_id[job_id].args[0] != n
    ]
    resume = _resume(run, executions_of(executions, "job"))
    return Outcome(
        topology=run.topology,
        acknowledged=len(acked),
        succeeded=len(acked & done),
        lost=len(lost),
        duplicated=len(twice),
        ticks_expected=len(expected),
        ticks_ran=len(ran),
        ticks_duplicated=sum(1 for runs in tick_runs.values() if runs > 1),
        resume_seconds=round(resume, 2) if resume is not None else None,
        details={
            **run.notes,
            "lost_sample": lost[:20],
            "lost_but_ran": sum(1 for n in lost if ("job", n) in executions),
            "lost_never_in_database": sum(1 for n in lost if n not in rows),
            "extra_executions": sum(count - 1 for count in twice.values()),
            "double_claims": len(double_claims),
            "double_claims_sample": double_claims[:20],
            "ids_reused": len(reused),
            "unacknowledged_in_database": len(set(rows) - acked),
            "tick_rows_duplicated": sum(1 for t in expected if len(tick_rows.get(t, [])) > 1),
            "ticks_missing": [t for t in expected if t not in tick_runs],
            "killed_at": run.killed_at,
            "recovered_at": run.recovered_at,
            "failover_seconds": (
                round(run.recovered_at - run.killed_at, 2)
                if run.recovered_at and run.killed_at
                else None
            ),
            "final_states": _states(by_id.values()),
        },
    )


def executions_of(executions: Mapping[tuple[str, int], list[Mark]], kind: str) -> list[Mark]:
    return [mark for (of, _), marks in executions.items() if of == kind for mark in marks]


def _resume(run: Run, marks: Iterable[Mark]) -> float | None:
    """From the kill to the first job that started once the failover was over: only the new
    writer can have handed it out. (A job's ``finished_at`` would not do: it is the time its
    worker took the outcome, before a commit that may have waited for the new writer.)"""
    if run.killed_at is None:
        return None
    over = run.recovered_at or run.killed_at
    after = [mark.at for mark in marks if mark.at > over]
    return min(after) - run.killed_at if after else None


def _states(jobs: Iterable[Job]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for job in jobs:
        counts[f"{job.task}:{job.state.value}"] += 1
    return dict(counts)
