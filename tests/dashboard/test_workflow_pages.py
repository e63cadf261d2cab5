"""A workflow on the dashboard and in the HTTP API: the job's page shows its steps as a
timeline with their results, what it waits for and until when, and its batch; the API's job
carries the same, and ``POST /api/jobs/{id}/signal`` sends a signal as ``rota.signal`` does."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota import Enqueue, JobContext, JobState, Rota
from tests.dashboard.api_client import READ, api_client, error_of

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def approval(rota: Rota) -> int:
    @rota.task
    def approve(ctx: JobContext, order: int) -> object:
        ctx.step("reserve <stock>", lambda: {"order": order, "held": True})
        return ctx.wait_for("approved", timeout=timedelta(hours=4))

    batch = rota.batch([Enqueue(approve, 7)])
    rota.drain()
    (job_id,) = batch.job_ids
    assert rota.job(job_id).state is JobState.WAITING
    return job_id


def test_the_job_page_shows_steps_the_wait_and_the_batch(rota: Rota, approval: int) -> None:
    page = api_client(rota, sends=None, token=None).get(f"/jobs/{approval}")
    assert page.status_code == 200, page.text
    html = page.text
    assert '<span class="state state-waiting">waiting</span>' in html
    waits = html.split('<dd class="waits-for">')[1].split("</dd>")[0]
    assert waits == "signal <code>approved</code>, until 2026-03-02 13:00:00Z"
    assert f'<dd class="batch">{rota.job(approval).batch_id}</dd>' in html
    steps = html.split('<ol class="steps">')[1].split("</ol>")[0]
    assert "<code>reserve &lt;stock&gt;</code>" in steps, "names are escaped"
    assert "&#34;held&#34;: true" in steps
    assert "Cancel" in html, "a waiting job can be cancelled"


def test_the_api_shows_the_workflow_and_sends_signals(rota: Rota, approval: int) -> None:
    client = api_client(rota)
    shown = client.get(f"/api/jobs/{approval}").json()
    assert (shown["state"], shown["waiting_for"]) == ("waiting", "approved")
    assert shown["batch_id"] == rota.job(approval).batch_id
    assert [(step["name"], step["result"]) for step in shown["steps"]] == [
        ("reserve <stock>", {"order": 7, "held": True})
    ]
    refused = api_client(rota, READ).post(f"/api/jobs/{approval}/signal", json={"signal": "x"})
    assert refused.status_code == 403
    missing = client.post(f"/api/jobs/{approval}/signal", json={"payload": 1})
    assert "signal" in error_of(missing, 400, "INVALID_ARGUMENTS")
    sent = client.post(f"/api/jobs/{approval}/signal", json={"signal": "approved", "payload": "ok"})
    assert (sent.status_code, sent.json()) == (200, {"sent": True})
    assert rota.job(approval).state is JobState.PENDING
    rota.drain()
    assert rota.result(approval) == "ok"
    again = client.post(f"/api/jobs/{approval}/signal", json={"signal": "approved"})
    assert again.json() == {"sent": False}, "a finished job takes no signal"
