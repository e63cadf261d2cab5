"""``/metrics``: jobs, workers and schedules in the Prometheus exposition formats.

The numbers are read from the database at every scrape by a custom collector, not counted in
this process: the database is what every worker and dashboard process shares, so any one
dashboard reports the whole deployment, and two of them report the same.  ``prometheus_client``
writes the exposition (escaping, ``# HELP``/``# TYPE``, the text format or OpenMetrics as the
scraper's ``Accept`` asks), so label values such as queue names need no escaping of our own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from rota.app import Rota
from rota.core.model import FINISHED_WINDOW, JobState
from rota.core.schedules import ScheduleState


class RotaCollector:
    """Gauges of ``rota``'s jobs by state and by queue, live workers and schedules by state.

    The jobs are every live job and the finished ones of the last ``FINISHED_WINDOW`` (a
    scrape must not read the whole history)."""

    def __init__(self, rota: Rota) -> None:
        self.rota = rota

    def collect(self) -> Iterator[Metric]:
        counts = self.rota.counts(finished_since=self.rota.clock.now() - FINISHED_WINDOW)
        described = "Jobs by state (finished: the last 24 hours)."
        jobs = GaugeMetricFamily("rota_jobs", described, labels=["state"])
        for state in JobState:
            jobs.add_metric([state.value], counts.by_state.get(state.value, 0))
        yield jobs

        by_queue = GaugeMetricFamily(
            "rota_jobs_queue", "Jobs by queue and state.", labels=["queue", "state"]
        )
        for queue, states in sorted(counts.by_queue.items()):
            for state_name, count in sorted(states.items()):
                if count:
                    by_queue.add_metric([queue, state_name], count)
        yield by_queue

        workers = self.rota.inspect.workers()
        yield GaugeMetricFamily(
            "rota_workers_live",
            "Workers that missed fewer than two heartbeats.",
            value=len(workers),
        )

        states = Counter(s.state.value for s in self.rota.inspect.schedules())
        schedules = GaugeMetricFamily("rota_schedules", "Schedules by state.", labels=["state"])
        for schedule_state in ScheduleState:
            schedules.add_metric([schedule_state.value], states.get(schedule_state.value, 0))
        yield schedules


def registry(rota: Rota) -> CollectorRegistry:
    """A registry of its own holding only ``rota``'s collector (not the process-wide one, so
    mounting two dashboards, or an application's own metrics, never clash)."""
    own = CollectorRegistry(auto_describe=False)
    own.register(RotaCollector(rota))
    return own


def exposition(source: CollectorRegistry, accept: str) -> tuple[bytes, str]:
    """The scrape's body and content type, in the format ``accept`` prefers."""
    encode, content_type = choose_encoder(accept)
    return encode(source), content_type
