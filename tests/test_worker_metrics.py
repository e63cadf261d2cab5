"""A worker's Prometheus metrics (``metrics_port``): counted from the committed outcomes, in a
registry of each ``Rota``'s own, served over HTTP from start to stop."""

from __future__ import annotations

import asyncio
import socket
import sys
import urllib.request
from collections.abc import Callable
from datetime import timedelta

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from rota import ConfigError, JobContext, Rota, TaskDefinition
from rota.cli import main
from rota.testing import FakeClock

pytestmark = pytest.mark.sqlite_only


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def job_labels(task: str) -> tuple[tuple[str, str], ...]:
    return (("queue", "default"), ("task", task))


def test_outcomes_are_counted_and_served_while_the_worker_runs(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota(metrics_port=0)
    failures = [1]

    @rota.task(retries=1, retry_delay=0)
    def flaky(ctx: JobContext) -> None:
        if failures[0]:
            failures[0] -= 1
            raise RuntimeError("once")

    @rota.task(retries=0)
    def broken(ctx: JobContext) -> None:
        raise RuntimeError("always")

    @rota.task
    def fine(ctx: JobContext) -> None:
        pass

    rota.define_task(
        TaskDefinition(name="nightly", handler=lambda ctx: None, cron="0 3 * * *", retries=0)
    )
    rota.queue(fine)
    rota.queue(fine, delay=30)
    rota.queue(flaky)
    rota.queue(broken)
    rota.drain()
    clock.advance(timedelta(seconds=30))
    rota.drain()

    async def served() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        await rota.start()
        try:
            port = rota.metrics_port
            assert port is not None and port > 0
            return await asyncio.to_thread(scrape, port)
        finally:
            await rota.stop(grace=1)

    samples = asyncio.run(served())
    assert rota.metrics_port is None
    fine_, flaky_, broken_ = job_labels("fine"), job_labels("flaky"), job_labels("broken")
    assert samples[("rota_worker_jobs_started_total", fine_)] == 2
    assert samples[("rota_worker_jobs_succeeded_total", fine_)] == 2
    assert samples[("rota_worker_jobs_started_total", flaky_)] == 2
    assert samples[("rota_worker_jobs_retried_total", flaky_)] == 1
    assert samples[("rota_worker_jobs_succeeded_total", flaky_)] == 1
    assert samples[("rota_worker_jobs_failed_total", broken_)] == 1
    assert ("rota_worker_jobs_failed_total", fine_) not in samples
    assert samples[("rota_worker_job_duration_seconds_count", fine_)] == 2
    assert samples[("rota_worker_job_duration_seconds_count", flaky_)] == 2
    assert samples[("rota_worker_claim_latency_seconds_count", fine_)] == 2
    assert samples[("rota_worker_claim_latency_seconds_sum", fine_)] == pytest.approx(0, abs=1)


def test_schedule_gauges_follow_the_ticks(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    rota = make_rota(metrics_port=0)
    broken = [True]

    def report(ctx: JobContext) -> None:
        if broken[0]:
            raise RuntimeError("down")

    rota.define_task(TaskDefinition(name="report", handler=report, cron="* * * * *", retries=0))
    start = clock.now()
    seen: list[tuple[float, float | None]] = []
    for tick in range(4):
        broken[0] = tick in (0, 1, 3)
        rota.drain()
        clock.advance(timedelta(minutes=1))
        metrics = rota._host.announcer.metrics
        assert metrics is not None
        registry = metrics.registry
        labels = {"schedule": "report"}
        failures = registry.get_sample_value("rota_schedule_consecutive_failures", labels)
        success = registry.get_sample_value("rota_schedule_last_success_timestamp_seconds", labels)
        seen.append((failures or 0.0, success))
    succeeded_at = (start + timedelta(minutes=2)).timestamp()
    assert seen == [(1, None), (2, None), (0, succeeded_at), (1, succeeded_at)]


def test_two_rotas_in_one_process_have_registries_of_their_own(
    make_rota: Callable[..., Rota],
) -> None:
    first, second = make_rota(metrics_port=0), make_rota(metrics_port=0)
    one, two = first._host.announcer.metrics, second._host.announcer.metrics
    assert one is not None and two is not None and one.registry is not two.registry
    assert make_rota()._host.announcer.metrics is None


@pytest.mark.parametrize("port", [-1, 65536, "9100", True])
def test_metrics_port_is_validated(make_rota: Callable[..., Rota], port: object) -> None:
    with pytest.raises(ConfigError, match="metrics_port"):
        make_rota(metrics_port=port)


def test_a_taken_metrics_port_is_a_config_error_and_the_worker_does_not_start(
    make_rota: Callable[..., Rota],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        rota = make_rota(metrics_port=taken.getsockname()[1])
        rota.counts()  # the schema exists, so what a start registered could be read
        with pytest.raises(ConfigError, match=r"cannot serve worker metrics on 127\.0\.0\.1"):
            asyncio.run(rota.start())
    assert rota.metrics_port is None
    assert rota.inspect.workers() == [], "refused before the worker registered"


def test_rota_worker_accepts_metrics_port() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["worker", "--help"])
    assert result.exit_code == 0 and "--metrics-port" in result.output
    refused = runner.invoke(
        main, ["worker", "app:rota", "--metrics-port", "9100", "--processes", "2"]
    )
    assert refused.exit_code == 2 and "--metrics-port" in refused.output


def test_metrics_without_prometheus_client_name_the_extra(
    make_rota: Callable[..., Rota], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ConfigError, match=r"rota\[dashboard\]"):
        make_rota(metrics_port=9100)
    assert make_rota().metrics_port is None
