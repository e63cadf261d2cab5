"""OpenTelemetry: a span per attempt, linked to the span that enqueued the job, and metrics.

Used only when the ``opentelemetry-api`` package is importable (extra ``rota[otel]``); without
it ``load_telemetry`` returns ``None`` and rota makes no OpenTelemetry calls at all.  Without an
SDK configured the API's no-op implementations make the calls cheap.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from rota.core.model import AttemptError, Job
from rota.core.transitions import Transition, Verdict, VerdictKind

TRACEPARENT = "traceparent"


class Telemetry:
    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from opentelemetry import metrics, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._trace = trace
        self._own_tracer = tracer_provider is not None
        self._propagator = TraceContextTextMapPropagator()
        self._tracer = trace.get_tracer("rota", tracer_provider=tracer_provider)
        meter = metrics.get_meter("rota", meter_provider=meter_provider)
        self._counters = {
            name: meter.create_counter(f"rota.jobs.{name}", unit="{job}")
            for name in ("started", "succeeded", "failed", "retried")
        }
        self._duration = meter.create_histogram("rota.job.duration", unit="s")
        self._queue_wait = meter.create_histogram("rota.job.queue_wait", unit="s")

    @property
    def tracing(self) -> bool:
        """Whether spans go anywhere: a tracer provider was given or one was set globally.
        Until then the API's spans are no-ops that still cost a ``queue()`` several per cent,
        so none is made (a provider set later is used from then on)."""
        provider = self._trace.get_tracer_provider()
        return self._own_tracer or not isinstance(provider, self._trace.ProxyTracerProvider)

    @contextmanager
    def enqueue(self, tasks: Sequence[str]) -> Iterator[str | None]:
        """A producer span around an enqueue; yields the trace context to store on the jobs."""
        if not self.tracing:
            yield None
            return
        attributes: dict[str, Any] = {
            "rota.jobs": len(tasks),
            "rota.task": ",".join(sorted(set(tasks))),
        }
        with self._tracer.start_as_current_span(
            "rota enqueue", kind=self._trace.SpanKind.PRODUCER, attributes=attributes
        ):
            carrier: dict[str, str] = {}
            self._propagator.inject(carrier)
            yield carrier.get(TRACEPARENT)

    def begin(self, job: Job, now: datetime) -> Any:
        """Start the consumer span of one attempt, linked to its enqueue span if known."""
        self._counters["started"].add(1, {"rota.task": job.task, "rota.queue": job.queue})
        self._queue_wait.record(
            max(0.0, (now - job.run_at).total_seconds()), {"rota.task": job.task}
        )
        if not self.tracing:
            return None
        links = []
        if job.trace:
            context = self._propagator.extract({TRACEPARENT: job.trace})
            linked = self._trace.get_current_span(context).get_span_context()
            if linked.is_valid:
                links.append(self._trace.Link(linked))
        attributes = _attributes(job)
        return self._tracer.start_span(
            f"rota run {job.task}",
            kind=self._trace.SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
        )

    def end(
        self,
        span: Any,
        job: Job,
        verdict: Verdict,
        transition: Transition,
        duration: float,
        error: BaseException | None,
    ) -> None:
        """Count the attempt by its verdict and end ``span`` (``None`` while nothing traces)."""
        labels = {"rota.task": job.task, "rota.queue": job.queue}
        failed = verdict.kind in (VerdictKind.FAILED, VerdictKind.TIMED_OUT)
        if verdict.kind is VerdictKind.SUCCEEDED:
            self._counters["succeeded"].add(1, labels)
        elif failed:
            retried = transition.target.value == "pending"
            self._counters["retried" if retried else "failed"].add(1, labels)
        self._duration.record(duration, {**labels, "rota.outcome": verdict.kind.value})
        if span is None:
            return
        span.set_attribute("rota.outcome", verdict.kind.value)
        span.set_attribute("rota.next_state", transition.target.value)
        if failed:
            if error is not None and verdict.error is not None:
                _record_exception(span, error, verdict.error)
            message = verdict.error.message if verdict.error else verdict.kind.value
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))
        span.end()

    def lost(self, span: Any) -> None:
        """End the span of an attempt whose outcome was not written: its job was no longer
        held (another worker took it), so it counts as nothing."""
        if span is None:
            return
        span.set_attribute("rota.outcome", "lost")
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "lease lost"))
        span.end()


def _record_exception(span: Any, error: BaseException, recorded: AttemptError) -> None:
    """The span's ``exception`` event; for an exception whose ``__str__`` raises (which the SDK
    calls), the same event made of what the attempt recorded (``rota.core.failures``)."""
    try:
        span.record_exception(error)
    except Exception:
        span.add_event(
            "exception",
            {
                "exception.type": recorded.type,
                "exception.message": recorded.message,
                "exception.stacktrace": recorded.traceback,
                "exception.escaped": "False",
            },
        )


def _attributes(job: Job) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "rota.task": job.task,
        "rota.job_id": job.id,
        "rota.attempt": job.attempt,
        "rota.queue": job.queue,
        "messaging.system": "rota",
        "messaging.operation": "process",
    }
    if job.schedule:
        attributes["rota.schedule"] = job.schedule
    return attributes


def load_telemetry(tracer_provider: Any = None, meter_provider: Any = None) -> Telemetry | None:
    """A ``Telemetry`` when the OpenTelemetry API is installed, else ``None``."""
    try:
        return Telemetry(tracer_provider, meter_provider)
    except ImportError:
        return None
