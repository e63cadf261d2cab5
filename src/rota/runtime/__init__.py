"""The runtime: what a ``Rota`` does, on the caller's thread or the worker's event loop; it
talks to storage only through the ``Store`` protocol (``store.base``) and its values.

::

    services/      what the application calls, on its own thread: readiness, queueing,
                   control, schedules, results, status and inspection (rota.inspect, what
                   the tools read), and the actors of schedule history
    worker/        the worker on its event loop: claim, run, complete, leases, housekeeping,
                   the scheduler, tick alerts, listening for new jobs, the shared outlook
    host/          a process's life: start and stop (process), signals, drain, wake-ups,
                   supervising several worker processes
    common.py      what services, worker and host share: store, tasks, clock, event log
    announcer.py   the one place a job's outcome is told: events after the commit
    timeline.py    leases on one time line: this process's clock kept on the server's
    retention.py   how long finished jobs are kept, and their pruning
    timer.py       where the runtime waits: polls, heartbeats, back-offs, grace periods
"""
