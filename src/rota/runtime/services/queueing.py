"""Queueing jobs: requests resolved and checked (``enqueue.build``, all or nothing), written in
one transaction under a producer span, and this process's worker woken to claim them; a batch
likewise, its callbacks in the same transaction."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import TypeAlias

from rota.core.model import WorkerInfo
from rota.core.workflow import Batch
from rota.enqueue import MAX_DEPENDENCIES, Enqueue, Target, build, resolve, task_names
from rota.errors import InvalidArguments
from rota.observe.otel import Telemetry
from rota.runtime.common import Common, Gate
from rota.store.base import CallerConnection
from rota.tasks import Handler

Lent: TypeAlias = "CallerConnection | None"
"""The caller's connection a write goes through, if any."""
Stamped: TypeAlias = "tuple[list[int], datetime]"
"""Job ids, and the ``created_at`` they were written with."""


class Enqueuing:
    def __init__(
        self, common: Common, telemetry: Telemetry | None, max_payload_bytes: int, gate: Gate
    ) -> None:
        self.store, self.registry, self.clock, self.events = common
        self.telemetry = telemetry
        self.max_payload_bytes = max_payload_bytes
        self.gate = gate

    def many(self, requests: Sequence[Enqueue], connection: CallerConnection | None) -> list[int]:
        return self.stamped(requests, connection)[0]

    def stamped(
        self, requests: Sequence[Enqueue], connection: CallerConnection | None
    ) -> tuple[list[int], datetime]:
        """``many``, and the moment written as the jobs' ``created_at`` (stored exactly: every
        dialect keeps microseconds), for a caller that reports it without reading it back."""
        if not requests:
            return [], self.clock.now()
        targets = functools.cache(self.target)
        span = self.telemetry.enqueue(task_names(requests)) if self.telemetry else nullcontext()
        with span as trace:
            now = self.clock.now()
            jobs = build(requests, targets, now, self.max_payload_bytes, trace)
            self.gate.ensure_ready()
            ids = self.store.jobs.enqueue(jobs, now, connection=connection)
        self.gate.wake_worker()
        return ids, now

    def batch(
        self,
        requests: Sequence[Enqueue],
        on_success: Enqueue | None,
        on_complete: Enqueue | None,
    ) -> Batch:
        """The jobs and the callbacks written in one transaction (``store.batches``), all or
        nothing; each callback gets the batch's jobs as its dependencies, so it takes none of
        its own."""
        if not requests:
            raise InvalidArguments("a batch holds at least one job")
        if len(requests) > MAX_DEPENDENCIES:
            raise InvalidArguments(
                f"a batch holds at most {MAX_DEPENDENCIES} jobs, not {len(requests)}"
            )
        callbacks = [each for each in (on_success, on_complete) if each is not None]
        for each in [*requests, *callbacks]:
            if not isinstance(each, Enqueue):
                raise InvalidArguments(f"a batch is made of Enqueue requests, got {each!r}")
            if each.unique_key is not None:
                # A key a live job holds would make that job the batch's, uncounted, unlinked.
                raise InvalidArguments("a batch's jobs and callbacks take no unique_key")
        for callback in callbacks:
            if callback.depends_on or callback.after:
                raise InvalidArguments(
                    "a batch's callback waits for the batch's jobs: give it no depends_on or after"
                )
        targets = functools.cache(self.target)
        everything = [*requests, *callbacks]
        span = self.telemetry.enqueue(task_names(everything)) if self.telemetry else nullcontext()
        with span as trace:
            now = self.clock.now()
            jobs = build(everything, targets, now, self.max_payload_bytes, trace)
            members, built = jobs[: len(requests)], iter(jobs[len(requests) :])
            success = next(built) if on_success is not None else None
            complete = next(built) if on_complete is not None else None
            self.gate.ensure_ready()
            queued = self.store.batches.queue(members, success, complete, now)
        self.gate.wake_worker()
        return Batch(queued.id, list(queued.job_ids))

    def target(self, task: str | Handler) -> Target:
        """The task a request names; a name only another service defines goes to the queue a
        live worker registered it under."""
        now = self.clock.now()

        def live() -> list[WorkerInfo]:
            self.gate.ensure_ready()
            return self.store.cluster.workers(now)

        return resolve(task, self.registry, live, self.events)
