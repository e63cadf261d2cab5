"""The worker, on its event loop: it claims due jobs (``worker``) into its slots (``slots``),
runs them (``executor``, ``isolation`` for a child process, ``threads`` for sync handlers,
``progress``), completes them in batches (``completer``), keeps their leases from a thread of its
own (``leases``), rescues and prunes (``housekeeping``), fires cron ticks (``scheduler``), counts
tick alerts (``alerts``), listens for new jobs (``listener``) and shares one outlook of the
database (``outlook``); ``settings`` is what it is told, ``backoff`` how its loops carry on
after an error."""

from rota.runtime.worker.worker import Worker, WorkerContext

__all__ = ["Worker", "WorkerContext"]
