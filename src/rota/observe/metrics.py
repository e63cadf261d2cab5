"""Prometheus metrics of one worker process, served over HTTP (``metrics_port``).

The runtime's announcer feeds them once an outcome is committed, so they count what the
database holds, as the events do.  Each ``Rota`` keeps its own registry: two in one process do
not clash, and the global default registry (the application's own metrics) is left alone.  The
schedule gauges are this process's view: the ticks its worker finished or rescued.  The
dashboard's ``/metrics`` is another thing: database-wide counts, whoever ran the jobs.

``prometheus_client`` comes with the extra ``rota[dashboard]``; it is imported only when
metrics are asked for.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from rota.core.events import EventName
from rota.core.model import Job
from rota.errors import ConfigError

DEFAULT_METRICS_HOST = "127.0.0.1"
COUNTED = {
    EventName.JOB_SUCCEEDED: "succeeded",
    EventName.JOB_FAILED: "failed",
    EventName.JOB_RETRYING: "retried",
}
"""The outcome events the counters of the same name count."""
LABELS = ("task", "queue")


class WorkerMetrics:
    def __init__(self) -> None:
        try:
            import prometheus_client as prometheus
        except ImportError as error:
            raise ConfigError(
                "metrics_port needs prometheus_client: pip install 'rota[dashboard]'"
            ) from error
        self._prometheus = prometheus
        self.registry = prometheus.CollectorRegistry()
        self._counters = {
            name: prometheus.Counter(
                f"rota_worker_jobs_{name}",
                f"Jobs whose attempt {name} in this worker.",
                LABELS,
                registry=self.registry,
            )
            for name in ("started", "succeeded", "failed", "retried")
        }
        self._duration = prometheus.Histogram(
            "rota_worker_job_duration_seconds",
            "Seconds an attempt ran.",
            LABELS,
            registry=self.registry,
        )
        self._claim_latency = prometheus.Histogram(
            "rota_worker_claim_latency_seconds",
            "Seconds from a job's run_at to the start of its attempt.",
            LABELS,
            registry=self.registry,
        )
        self._last_success = prometheus.Gauge(
            "rota_schedule_last_success_timestamp_seconds",
            "Unix time of the schedule's last tick that succeeded (seen by this worker).",
            ("schedule",),
            registry=self.registry,
        )
        self._failures = prometheus.Gauge(
            "rota_schedule_consecutive_failures",
            "Ticks of the schedule that failed in a row (seen by this worker).",
            ("schedule",),
            registry=self.registry,
        )
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    def started(self, job: Job, now: datetime) -> None:
        """An attempt began, its claim committed."""
        self._counters["started"].labels(job.task, job.queue).inc()
        latency = max(0.0, (now - job.run_at).total_seconds())
        self._claim_latency.labels(job.task, job.queue).observe(latency)

    def ran(self, job: Job, duration: float) -> None:
        """An attempt's outcome was written: how long it ran."""
        self._duration.labels(job.task, job.queue).observe(duration)

    def outcome(self, event: EventName, job: Job, at: datetime) -> None:
        """The job's outcome (``event``) was written, at ``at``: by an attempt or a rescue."""
        name = COUNTED.get(event)
        if name is None:
            return
        self._counters[name].labels(job.task, job.queue).inc()
        if job.schedule is None or name == "retried":
            return
        if name == "succeeded":
            self._last_success.labels(job.schedule).set(at.timestamp())
            self._failures.labels(job.schedule).set(0)
        else:
            self._failures.labels(job.schedule).inc()

    def serve(self, host: str, port: int) -> None:
        """Serve the registry at ``http://host:port/metrics`` (port 0: one the system picks,
        then in ``port``), from a daemon thread; ``close`` stops it."""
        if self._server is not None:
            return
        try:
            self._server, self._thread = self._prometheus.start_http_server(
                port, host, registry=self.registry
            )
        except OSError as error:  # taken, or not an address of this host
            raise ConfigError(
                f"cannot serve worker metrics on {host}:{port}: {error.strerror or error}"
            ) from None
        self.port = int(self._server.server_address[1])

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        self.port = None
