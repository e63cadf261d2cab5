"""The execution log: one structured ``logging`` record per lifecycle event.

Every record carries ``event`` plus the job fields in ``extra`` so handlers and formatters can
read them as attributes; the message repeats them as ``key=value`` for plain-text logs.
"""

from __future__ import annotations

import logging
from typing import Any

from rota.core.model import Job

JOB_FIELDS = ("job_id", "task", "queue", "attempt", "schedule", "duration_ms")


class EventLog:
    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("rota.events")

    def emit(self, event: str, level: int = logging.INFO, **fields: Any) -> None:
        if not self.logger.isEnabledFor(level):
            return
        shown = " ".join(f"{key}={value}" for key, value in fields.items() if value is not None)
        extra = {key: fields.get(key) for key in JOB_FIELDS}
        extra.update(fields)
        extra["event"] = event
        self.logger.log(level, "%s %s", event, shown, extra=extra)

    def job(self, event: str, job: Job, level: int = logging.INFO, **fields: Any) -> None:
        self.emit(
            event,
            level,
            job_id=job.id,
            task=job.task,
            queue=job.queue,
            attempt=job.attempt,
            schedule=job.schedule,
            **fields,
        )
