"""OpenTelemetry: one span per attempt linked to its enqueue span, counters and histograms."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from rota import JobContext, Rota
from rota.observe import otel
from rota.testing import FakeClock

pytestmark = pytest.mark.sqlite_only


def attributes(span: ReadableSpan) -> Mapping[str, object]:
    assert span.attributes is not None, span.name
    return span.attributes


def test_spans_and_metrics(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    rota = make_rota(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
    )

    @rota.task(retries=1, retry_delay=1)
    def charge(ctx: JobContext, amount: int) -> None:
        if ctx.attempt == 1:
            raise ValueError("card declined")

    job_id = rota.queue(charge, 5, delay=2)
    clock.advance(3)
    rota.drain()
    clock.advance(5)
    rota.drain()

    spans = exporter.get_finished_spans()
    (enqueue,) = [s for s in spans if s.name == "rota enqueue"]
    runs = [s for s in spans if s.name == "rota run charge"]
    assert enqueue.kind is SpanKind.PRODUCER
    assert [attributes(s)["rota.attempt"] for s in runs] == [1, 2]
    for span in runs:
        assert span.kind is SpanKind.CONSUMER
        assert attributes(span)["rota.job_id"] == job_id
        assert attributes(span)["rota.task"] == "charge"
        assert [link.context.span_id for link in span.links] == [enqueue.context.span_id]
    failed, succeeded = runs
    assert failed.status.status_code is StatusCode.ERROR
    assert attributes(failed)["rota.outcome"] == "failed"
    assert [event.name for event in failed.events] == ["exception"]
    assert attributes(succeeded)["rota.outcome"] == "succeeded"

    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: metric.data.data_points
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }

    def counter(name: str) -> list[NumberDataPoint]:
        found = [p for p in points[name] if isinstance(p, NumberDataPoint)]
        assert len(found) == len(points[name]), f"{name} is a counter"
        return found

    def histogram(name: str) -> list[HistogramDataPoint]:
        found = [p for p in points[name] if isinstance(p, HistogramDataPoint)]
        assert len(found) == len(points[name]), f"{name} is a histogram"
        return found

    total = {name: sum(p.value for p in counter(name)) for name in points if "jobs" in name}
    assert total == {"rota.jobs.started": 2, "rota.jobs.retried": 1, "rota.jobs.succeeded": 1}
    assert sum(p.count for p in histogram("rota.job.duration")) == 2
    (wait,) = histogram("rota.job.queue_wait")
    assert wait.count == 2
    assert 5.0 <= wait.sum <= 5.25, "1 s for the first attempt, 4 to 4.25 s for the retry"


def test_without_opentelemetry_rota_makes_no_calls(
    make_rota: Callable[..., Rota], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    assert otel.load_telemetry() is None
    rota = make_rota()
    assert rota.telemetry is None

    @rota.task
    def noop(ctx: JobContext) -> None: ...

    rota.queue(noop)
    assert rota.drain().succeeded == 1


TRACED_LATER = """
import subprocess
import sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rota import Rota

rota = Rota(f"sqlite:///{sys.argv[1]}")

@rota.task
def noop() -> None: ...

untraced = rota.job(rota.queue(noop))
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
traced = rota.job(rota.queue(noop))
rota.drain()
print(untraced.trace is None, traced.trace is not None)
print(sorted(span.name for span in exporter.get_finished_spans()))
"""


def test_spans_are_made_only_once_a_tracer_provider_is_set(tmp_path: Path) -> None:
    """Without a provider the API's spans go nowhere: none is made and no trace context is
    stored; a provider set globally later is used from then on (a fresh process, since the
    global provider can be set once)."""
    ran = subprocess.run(
        [sys.executable, "-c", TRACED_LATER, str(tmp_path / "rota.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    flags, names = ran.stdout.splitlines()
    assert flags == "True True"
    assert names == str(["rota enqueue", "rota run noop", "rota run noop"])


def test_an_unprintable_exception_is_recorded_on_its_span(
    make_rota: Callable[..., Rota],
) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    rota = make_rota(tracer_provider=tracer_provider)

    class Unprintable(ValueError):
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

    @rota.task(retries=1)
    def broken(ctx: JobContext) -> None:
        raise Unprintable

    rota.queue(broken)
    assert rota.drain().retried == 1
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "rota run broken"]
    (event,) = span.events
    assert event.name == "exception" and event.attributes is not None
    assert str(event.attributes["exception.message"]).startswith("<unprintable Unprintable")
    assert "raise Unprintable" in str(event.attributes["exception.stacktrace"])
