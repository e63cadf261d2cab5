"""``/metrics`` over every backend: the Prometheus exposition parses and says what the database
holds, and a metrics token opens it for Prometheus without opening anything else."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from rota import JobContext, Rota
from rota.core.model import JobState
from rota.dashboard import create_app
from tests.dashboard.test_dashboard import Seeded, csrf, seeded  # noqa: F401  (a fixture)

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

TOKEN = "dashboard-token-0123456789"
METRICS_TOKEN = "metrics-token-0123456789"
SCRAPER = {"authorization": f"Bearer {METRICS_TOKEN}"}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(
    text: str, parse: Callable[[str], Iterable[Metric]] = text_string_to_metric_families
) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    found: Samples = {}
    for family in parse(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_count_jobs_workers_and_schedules(seeded: Seeded) -> None:  # noqa: F811
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    help_line = "# HELP rota_jobs Jobs by state (finished: the last 24 hours).\n"
    assert help_line + "# TYPE rota_jobs gauge\n" in response.text
    found = samples(response.text)
    assert {
        ("rota_jobs", (("state", "succeeded"),)): 3,
        ("rota_jobs", (("state", "failed"),)): 1,
        ("rota_jobs", (("state", "running"),)): 1,
        ("rota_jobs", (("state", "pending"),)): 0,
        ("rota_jobs", (("state", "paused"),)): 0,
        ("rota_jobs", (("state", "cancelled"),)): 0,
        ("rota_jobs_queue", (("queue", "mail"), ("state", "failed"))): 1,
        ("rota_jobs_queue", (("queue", "default"), ("state", "succeeded"))): 3,
        ("rota_jobs_queue", (("queue", "default"), ("state", "running"))): 1,
        ("rota_workers_live", ()): 1,
        ("rota_schedules", (("state", "active"),)): 1,
        ("rota_schedules", (("state", "paused"),)): 0,
    }.items() <= found.items()
    # Every state has its rota_jobs sample; a queue lists only the states it has jobs in.
    states = {labels[0][1] for name, labels in found if name == "rota_jobs"}
    assert states == {state.value for state in JobState}
    assert ("rota_jobs_queue", (("queue", "mail"), ("state", "pending"))) not in found


def test_openmetrics_when_the_scraper_asks_for_it(seeded: Seeded) -> None:  # noqa: F811
    client = TestClient(create_app(seeded.rota), base_url="http://localhost")
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    response = client.get("/metrics", headers={"accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    found = samples(response.text, openmetrics_families)
    assert found[("rota_jobs", (("state", "succeeded"),))] == 3


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_label_values_are_escaped(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()
    hostile = 'we"ird\\queue} rota_jobs{state="x'

    @rota.task(queue=hostile)
    def odd(ctx: JobContext) -> None: ...

    rota.queue(odd)
    response = TestClient(create_app(rota), base_url="http://localhost").get("/metrics")
    found = samples(response.text)
    assert found[("rota_jobs_queue", (("queue", hostile), ("state", "pending")))] == 1
    assert found[("rota_jobs", (("state", "pending"),))] == 1
    assert ("rota_jobs", (("state", "x"),)) not in found


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_the_metrics_token_opens_metrics_only(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()
    app = create_app(rota, token=TOKEN, metrics_token=METRICS_TOKEN)
    scraper = TestClient(app, headers=SCRAPER)
    response = scraper.get("/metrics")
    assert response.status_code == 200
    assert samples(response.text)[("rota_workers_live", ())] == 0
    for path in ("/", "/jobs", "/jobs/1", "/schedules", "/workers", "/static/dashboard.css"):
        refused = scraper.get(path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"] == 'Bearer realm="rota"'
    assert scraper.post("/queues/pause", data={"queue": "default"}).status_code == 401
    assert rota.paused_queues() == []
    # Nor does it log anybody in.
    form = {"csrf_token": csrf(scraper, "/login"), "token": METRICS_TOKEN}
    login = scraper.post("/login", data=form)
    assert login.status_code == 401 and "That token is not right" in login.text
    assert "rota_session" not in login.cookies
    # Without it, /metrics needs the dashboard token, as before.
    assert TestClient(app).get("/metrics").status_code == 401
    wrong = {"authorization": "Bearer metrics-token-9876543210"}
    assert TestClient(app).get("/metrics", headers=wrong).status_code == 401
    ui = TestClient(app, headers={"authorization": f"Bearer {TOKEN}"})
    assert ui.get("/metrics").status_code == 200 and ui.get("/").status_code == 200
