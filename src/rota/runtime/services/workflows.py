"""What an application asks of its workflows: a job's saved steps, and signals to jobs.

A signal goes to one job by id, or by unique key to the live jobs of the named task (a unique
key is scoped per task; without ``task``, the tasks this process registered) holding it, where
an index finds it. It is kept in the job's mailbox until a ``ctx.wait_for`` of its name takes
it, and wakes a job waiting for it (``store.workflow``).
"""

from __future__ import annotations

from typing import Any

from rota.core.names import check_name, name_problem
from rota.core.workflow import BatchStatus, Step
from rota.errors import InvalidArguments, JobNotFound
from rota.runtime.common import Common, Gate
from rota.runtime.services import results
from rota.runtime.services.control import job_id


class Workflows:
    def __init__(self, common: Common, gate: Gate, payload_bytes: int) -> None:
        self.store, self.registry, self.clock, self.events = common
        self.gate = gate
        self.payload_bytes = payload_bytes

    def steps(self, id: object) -> list[Step]:
        checked = job_id(id)
        self.gate.ensure_ready()
        if self.store.reads.job_state(checked) is None:
            raise JobNotFound(f"job {checked} does not exist")
        return self.store.workflow.saved(checked)

    def batch_status(self, id: object) -> BatchStatus:
        checked = job_id(id)
        self.gate.ensure_ready()
        status = self.store.batches.status(checked)
        if status is None:
            raise JobNotFound(f"batch {checked} does not exist")
        return status

    def signal(self, target: int | str, signal: str, payload: Any, task: str | None) -> bool:
        name = check_name("signal", signal, InvalidArguments)
        encoded = results.encode(payload, self.payload_bytes, "signal's payload", InvalidArguments)
        ids: list[int] = []
        keyed: tuple[list[str], str] | None = None
        if isinstance(target, str):
            keyed = (self._tasks(target, task), target)
        else:
            ids = [job_id(target)]
        self.gate.ensure_ready()
        sent = self.store.workflow.signal(ids, keyed, name, encoded, self.clock.now())
        if sent:
            self.gate.wake_worker()
        return sent

    def _tasks(self, unique_key: str, task: str | None) -> list[str]:
        problem = name_problem("unique_key", unique_key)
        if problem is not None:
            raise InvalidArguments(problem)
        if task is not None:
            return [check_name("task", task, InvalidArguments)]
        tasks = sorted(self.registry.names())
        if not tasks:
            raise InvalidArguments(
                f"a signal to the unique key {unique_key!r} needs task=: a unique key is "
                "scoped per task, and this process registered none"
            )
        return tasks
