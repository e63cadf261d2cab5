"""A worker's row: what it serves and how it defines its tasks, as JSON, so that a worker
registers in one row; a row whose JSON cannot be read is an ``UnreadableRow``, not an error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rota.core.model import DEFAULT_QUEUE, WorkerInfo
from rota.store.rows import column_problem
from rota.store.values import UnreadableRow

WORKER_JSON = (
    ("queues", list, "a list of queue names"),
    ("tasks", dict, "an object of tasks"),
    ("definitions", dict, "an object of task fingerprints"),
)


def worker_values(worker: WorkerInfo) -> dict[str, Any]:
    """Queues and each task's queue are JSON, so a worker registers in one row."""
    return {
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "queues": json.dumps(list(worker.queues)),
        "tasks": json.dumps(
            {task: worker.task_queues.get(task, DEFAULT_QUEUE) for task in worker.tasks}
        ),
        "concurrency": worker.concurrency,
        "started_at": worker.started_at,
        "heartbeat_at": worker.heartbeat_at,
        "heartbeat_seconds": worker.heartbeat_seconds,
        "definitions": json.dumps(worker.definitions),
    }


def to_worker(data: Mapping[Any, Any]) -> WorkerInfo | UnreadableRow:
    """A worker row; an ``UnreadableRow`` when its ``queues`` or ``tasks`` are not the JSON a
    worker writes (a list of queue names, an object of task names to queue names)."""
    read: dict[str, Any] = {}
    for column, kind, shape in WORKER_JSON:
        try:
            read[column] = json_strings(data[column], kind, shape)
        except (ValueError, TypeError) as error:
            problem = column_problem(column, error, data[column])
            return UnreadableRow("worker", str(data["id"]), problem)
    return WorkerInfo(
        id=data["id"],
        host=data["host"],
        pid=data["pid"],
        queues=tuple(read["queues"]),
        tasks=tuple(read["tasks"]),
        task_queues=read["tasks"],
        concurrency=data["concurrency"],
        started_at=data["started_at"],
        heartbeat_at=data["heartbeat_at"],
        heartbeat_seconds=data["heartbeat_seconds"],
        definitions=read["definitions"],
    )


def json_strings(
    stored: str | None, kind: type[list[Any]] | type[dict[Any, Any]], shape: str
) -> Any:
    """``stored`` as JSON of ``kind`` holding strings only (keys and values of an object); an
    empty one for NULL (a column older rotas did not write)."""
    if stored is None:
        return kind()
    value = json.loads(stored)
    items = [*value, *value.values()] if isinstance(value, dict) else value
    if not isinstance(value, kind) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"not {shape}")
    return value
