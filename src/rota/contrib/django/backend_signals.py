"""Django's ``task_started`` and ``task_finished`` signals, sent by the worker that runs the job.

rota announces a job's start and its end after they are committed (``job.started``,
``job.succeeded``, ``job.failed``, ``job.cancelled``: DESIGN, "Events and hooks"); a hook on
those events, in the worker's process, reads the job and sends the signal with its Django
result, as Django's own backends do around a task's run. Django's receivers log the
``RUNNING``, ``SUCCESSFUL`` and ``FAILED`` lines on the ``django.tasks`` logger from them. So
there is one path for every ending (a lease that expired included), and a receiver runs where
rota's hooks run: off the worker's loop, never able to hurt it.

The job may have moved on by the time the hook reads it (a short task has ended before its
start is announced), so the result carries the status of the event it is sent for. A retried
attempt is not an end (the job is ``READY`` again); a job cancelled before it ever started
sends nothing, having had no start.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from rota.app import Rota
from rota.contrib.django import backend_jobs
from rota.contrib.django.backend_api import TaskResultStatus, task_finished, task_started
from rota.core.events import EventName
from rota.observe.events import Event

STATUSES = {
    EventName.JOB_STARTED: "RUNNING",
    EventName.JOB_SUCCEEDED: "SUCCESSFUL",
    EventName.JOB_FAILED: "FAILED",
    EventName.JOB_CANCELLED: "FAILED",
}

_connected: weakref.WeakKeyDictionary[Rota, set[str]] = weakref.WeakKeyDictionary()


def connect(rota: Rota, alias: str, sender: type[Any]) -> None:
    """Send the signals of ``rota``'s jobs of Django tasks, as backend ``alias`` (once)."""
    aliases = _connected.setdefault(rota, set())
    if alias in aliases:
        return
    aliases.add(alias)
    hook = _hook(rota, alias, sender)
    for event in STATUSES:
        rota.on(event, hook)


def _hook(rota: Rota, alias: str, sender: type[Any]) -> Any:
    def send(event: Event) -> None:
        known = backend_jobs.KNOWN.get(event.task or "")
        if known is None or event.job_id is None:
            return
        job = rota.job(event.job_id)
        if job.started_at is None:  # cancelled before it ran
            return
        result = backend_jobs.result_of(known, job, alias)
        status = TaskResultStatus(STATUSES[event.name])
        if event.name is EventName.JOB_STARTED:
            started = dataclasses.replace(result, status=status, finished_at=None)
            task_started.send(sender, task_result=started)
            return
        if result.status != status:  # retried since: the end this event announced
            result = dataclasses.replace(result, status=status)
        task_finished.send(sender, task_result=result)

    return send
