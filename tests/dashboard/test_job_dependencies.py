"""A job's page links its dependencies and its dependents, both ways; so does ``rota job``."""

from __future__ import annotations

import json
import warnings

from click.testing import CliRunner

from rota import JobContext, Rota
from rota.cli import main
from rota.dashboard import create_app

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient


def test_a_job_page_links_what_it_depends_on_and_what_needs_it(rota: Rota) -> None:
    @rota.task
    def step(ctx: JobContext) -> None: ...

    first, second = rota.queue(step, delay=60), rota.queue(step, delay=60)
    middle = rota.queue(step, depends_on=[second, first])
    last = rota.queue(step, depends_on=[middle])
    client = TestClient(create_app(rota), base_url="http://localhost")

    page = client.get(f"/jobs/{middle}")
    assert page.status_code == 200, page.text
    depends, needed = page.text.split("<dt>depends on</dt>")[1].split("<dt>needed by</dt>")
    assert f'href="/jobs/{first}">{first}</a> <a href="/jobs/{second}">{second}</a>' in depends
    assert f'href="/jobs/{last}">{last}</a>' in needed.split("</dd>")[0]
    assert f'href="/jobs/{middle}"' in client.get(f"/jobs/{first}").text
    assert f'href="/jobs/{middle}"' in client.get(f"/jobs/{last}").text
    alone = client.get(f"/jobs/{last}").text
    assert "needed by" not in alone and "depends on" in alone


def test_rota_job_shows_dependencies_and_dependents(rota: Rota) -> None:
    @rota.task
    def step(ctx: JobContext) -> None: ...

    first = rota.queue(step, delay=60)
    middle = rota.queue(step, depends_on=[first])
    last = rota.queue(step, depends_on=[middle])
    where = ["--url", rota.config.url, "--table-prefix", rota.config.table_prefix]
    shown = CliRunner().invoke(main, ["job", str(middle), *where])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert any(line.split() == ["depends", "on", str(first)] for line in lines), shown.output
    assert any(line.split() == ["needed", "by", str(last)] for line in lines), shown.output
    as_json = CliRunner().invoke(main, ["job", str(middle), "--json", *where])
    data = json.loads(as_json.output)
    assert (data["depends_on"], data["needed_by"]) == ([first], [last])
