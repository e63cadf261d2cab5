"""The service's files: named after the tick they were made for, written atomically.

A file's name carries its tick (``accounts-20260302T061500Z.json``), not the time it was written,
so that a job run again for the same tick (at-least-once) finds the file it already wrote and
a cleanup run again for the same tick removes the same files.  A file is written to a temporary
name and renamed, so that a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from rota import Fail, JobContext

STAMP = "%Y%m%dT%H%M%SZ"


def tick_of(ctx: JobContext) -> datetime:
    """The tick the job runs for (or when its manual run was asked for): the idempotency key."""
    if ctx.scheduled_at is None:
        raise Fail(f"{ctx.task} runs on a schedule's tick, or as its manual run (rota run-now)")
    return ctx.scheduled_at


def stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(STAMP)


def stamp_of(path: Path) -> datetime | None:
    """The tick in ``path``'s name (``<kind>-<stamp>.json``); ``None`` for a foreign file."""
    try:
        return datetime.strptime(path.stem.rpartition("-")[2], STAMP).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def dated(directory: Path, kind: str) -> list[tuple[datetime, Path]]:
    """The files of ``kind`` in ``directory`` with their ticks, oldest first."""
    found = ((stamp_of(path), path) for path in directory.glob(f"{kind}-*.json"))
    return sorted((moment, path) for moment, path in found if moment is not None)


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as file:
        json.dump(value, file, indent=1)
    os.replace(file.name, path)
