"""``rota job ID`` shows a workflow as it stands: what a waiting job waits for and until when,
and every saved step with its result, in text and in ``--json``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from rota import Enqueue, JobContext, Rota
from rota.testing import FakeClock
from tests.cli.conftest import Cli, parsed
from tests.conftest import START

pytestmark = pytest.mark.sqlite_only


def test_a_waiting_workflow_shows_its_wait_and_its_steps(
    rota: Rota, clock: FakeClock, cli: Cli
) -> None:
    @rota.task
    def onboard(ctx: JobContext) -> None:
        ctx.step("account", lambda: {"id": 7, "note": "line\nbreak"})
        ctx.wait_for("verified", timeout=timedelta(hours=2))

    job_id = rota.queue(onboard)
    assert rota.drain().waiting == 1
    out = cli("job", str(job_id))
    assert out.exit_code == 0, out.output
    facts = dict(
        re.split(r"\s{2,}", line.strip(), maxsplit=1)
        for line in out.stdout.split("\n\n")[0].splitlines()
    )
    assert facts["state"] == "waiting"
    assert facts["waits for"] == "signal 'verified', until 2026-03-02 11:00:00Z"
    assert "steps (1)" in out.stdout
    assert '  account at 2026-03-02 09:00:00Z: {"id": 7, "note": "line\\nbreak"}' in out.stdout

    data = parsed(cli("job", str(job_id), "--json"))
    assert data["waiting_for"] == "verified"
    assert [(step["name"], step["result"]) for step in data["steps"]] == [
        ("account", {"id": 7, "note": "line\nbreak"})
    ]
    assert datetime.fromisoformat(data["steps"][0]["finished_at"]) == START


def test_a_batch_job_names_its_batch(rota: Rota, cli: Cli) -> None:
    @rota.task
    def part(ctx: JobContext) -> None: ...

    batch = rota.batch([Enqueue(part)])
    (job_id,) = batch.job_ids
    out = cli("job", str(job_id))
    lines = [re.split(r"\s{2,}", line.strip()) for line in out.stdout.splitlines()]
    assert ["batch", str(batch.id)] in lines
    assert parsed(cli("job", str(job_id), "--json"))["batch_id"] == batch.id
