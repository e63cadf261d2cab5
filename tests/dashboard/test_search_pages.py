"""The jobs page's filter bar, the bulk actions it offers, and replaying and editing one job."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import parse_qsl, urlsplit

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState
from rota.dashboard import create_app
from rota.testing import FakeClock
from tests.dashboard.forms import Forms

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

pytestmark = pytest.mark.sqlite_only

TOKEN = "s3cret-token-0123456789"
METRICS = "metrics-token-0123456789"
READER = "reader-token-0123456789"
HOSTILE = "<b>x</b>"


@pytest.fixture
def rota(make_rota: Callable[..., Rota]) -> Rota:
    rota = make_rota()

    @rota.task(retries=0)
    def boom(ctx: JobContext, n: int) -> None:
        raise RuntimeError(f"boom {n}")

    @rota.task
    def greet(ctx: JobContext, name: str) -> None: ...

    return rota


def client_of(rota: Rota) -> TestClient:
    return TestClient(create_app(rota), base_url="http://localhost")


def job_ids(html: str) -> list[int]:
    """The ids of the jobs a page's table lists, in order."""
    return [int(found) for found in re.findall(r'<td><a href="/jobs/(\d+)">', html)]


def only_form(html: str, action: str) -> dict[str, str]:
    """The fields of the page's form posting to ``action``."""
    forms = [form for row in Forms(html).rows.values() for form in row if form.action == action]
    assert len(forms) == 1, f"no single form posting to {action}"
    return forms[0].fields


def fail_some(rota: Rota, tags: list[str], count: int) -> list[int]:
    ids = [rota.queue("boom", n, tags=tags) for n in range(count)]
    rota.drain()
    return ids


def test_a_filter_in_the_url_narrows_the_rows_and_counts_them(rota: Rota) -> None:
    acme = fail_some(rota, ["tenant:acme"], 3)
    fail_some(rota, ["tenant:other"], 2)
    greeted = rota.queue("greet", "ada", tags=["tenant:acme"])
    client = client_of(rota)

    page = client.get("/jobs", params={"tag": "tenant:acme"})
    assert page.status_code == 200
    assert job_ids(page.text) == [greeted, *reversed(acme)]
    assert "<strong>4</strong> jobs match" in page.text
    assert 'class="tag" href="/jobs?tag=tenant%3Aacme"' in page.text
    assert "/bulk/retry?tag=tenant%3Aacme" in page.text

    narrower = client.get("/jobs", params=[("tag", "tenant:acme"), ("state", "failed")])
    assert job_ids(narrower.text) == list(reversed(acme))
    assert "<strong>3</strong> jobs match" in narrower.text
    by_error = client.get("/jobs", params={"error": "EXECUTION_FAILED", "since": "1h"})
    assert by_error.status_code == 200, re.findall(r"message\">([^<]*)", by_error.text)
    assert len(job_ids(by_error.text)) == 5
    assert job_ids(client.get("/jobs", params={"args": "ada"}).text) == [greeted]
    assert client.get("/jobs", params={"since": "yesterday"}).status_code == 400
    assert client.get("/jobs", params={"tag": "bad\ttag"}).status_code == 400

    plain = client.get("/jobs")
    assert len(job_ids(plain.text)) == 6 and "/bulk/" not in plain.text.replace('/bulk"', "")
    assert "jobs match" not in plain.text


def test_a_search_pages_by_cursor(rota: Rota, clock: FakeClock) -> None:
    ids = [rota.queue("greet", str(n), tags=["many"]) for n in range(60)]
    client = client_of(rota)
    first = client.get("/jobs", params={"tag": "many"})
    assert job_ids(first.text) == list(reversed(ids))[:50]
    older = re.search(r'<a rel="next" href="([^"]+)">Older →</a>', first.text)
    assert older, "a first page of a longer search links to the older jobs"
    query = dict(parse_qsl(urlsplit(older.group(1).replace("&amp;", "&")).query))
    assert query["tag"] == "many" and "cursor" in query and "page" not in query
    second = client.get(older.group(1).replace("&amp;", "&"))
    assert job_ids(second.text) == list(reversed(ids))[50:]
    assert "Older →" not in second.text and "← newest" in second.text
    assert client.get("/jobs", params={"tag": "many", "cursor": "nope"}).status_code == 400


def test_apply_to_all_confirms_then_acts_and_records_the_dashboard_user(rota: Rota) -> None:
    acme = fail_some(rota, ["tenant:acme"], 3)
    other = fail_some(rota, ["tenant:other"], 2)
    client = client_of(rota)
    jobs = client.get("/jobs", params={"tag": "tenant:acme", "state": "failed"})
    link = re.search(r'href="(/bulk/retry\?[^"]+)"', jobs.text)
    assert link, "a filtered page offers to retry every matching job"

    confirm = client.get(link.group(1).replace("&amp;", "&"))
    assert confirm.status_code == 200
    assert "Retry 3 jobs matching state failed, tags tenant:acme?" in confirm.text
    fields = only_form(confirm.text, "/bulk/retry")
    assert set(fields) == {"csrf_token", "filter"}
    assert rota.count(state="failed") == 5, "the confirmation page changes nothing"

    done = client.post("/bulk/retry", data=fields, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "/jobs?state=failed&tag=tenant%3Aacme&done=retry&jobs=3"
    assert "3 jobs retried" in client.get(done.headers["location"]).text
    assert {rota.job(id).state for id in acme} == {JobState.PENDING}
    assert {rota.job(id).state for id in other} == {JobState.FAILED}
    [recorded] = rota.inspect.bulk_actions()
    assert (recorded.actor, recorded.action, recorded.jobs) == ("dashboard:anonymous", "retry", 3)
    assert recorded.filter == {"state": ["failed"], "tags": ["tenant:acme"]}

    history = client.get("/bulk")
    assert history.status_code == 200 and "dashboard:anonymous" in history.text
    assert 'href="/jobs?state=failed&amp;tag=tenant%3Aacme"' in history.text


def test_a_bulk_action_needs_a_filter(rota: Rota) -> None:
    failed = fail_some(rota, [], 1)[0]
    client = client_of(rota)
    token = only_form(client.get(f"/jobs/{failed}").text, f"/jobs/{failed}/retry")["csrf_token"]
    assert client.get("/bulk/retry").status_code == 400
    assert client.get("/bulk/retry", params={"namespace": rota.namespace}).status_code == 400
    assert client.get("/bulk/explode", params={"state": "failed"}).status_code == 404
    for given in ({}, {"filter": "{}"}, {"filter": '{"namespace": "x"}'}, {"filter": "[1"}):
        posted = client.post("/bulk/retry", data={"csrf_token": token, **given})
        assert posted.status_code == 400, given
    no_csrf = client.post("/bulk/retry", data={"filter": '{"state": ["failed"]}'})
    assert no_csrf.status_code == 403
    assert rota.job(failed).state is JobState.FAILED
    assert rota.inspect.bulk_actions() == []


def test_read_only_credentials_cannot_act_in_bulk(rota: Rota) -> None:
    """The HTML dashboard has one role, the token's: the metrics token and the API's read
    tokens open no page of it, so neither sees nor posts a bulk action."""
    failed = fail_some(rota, ["t"], 1)[0]
    app = create_app(rota, token=TOKEN, metrics_token=METRICS, api_tokens={READER: "read"})
    for secret in (METRICS, READER):
        reader = TestClient(app, headers={"authorization": f"Bearer {secret}"})
        assert reader.get("/jobs", params={"tag": "t"}).status_code == 401
        assert reader.get("/bulk/retry", params={"tag": "t"}).status_code == 401
        posted = reader.post("/bulk/retry", data={"filter": '{"tags": ["t"]}'})
        assert posted.status_code == 401
    assert rota.job(failed).state is JobState.FAILED


def test_replay_a_finished_job_from_its_page(rota: Rota) -> None:
    failed = fail_some(rota, ["t"], 1)[0]
    client = client_of(rota)
    fields = only_form(client.get(f"/jobs/{failed}").text, f"/jobs/{failed}/replay")
    replayed = client.post(f"/jobs/{failed}/replay", data=fields, follow_redirects=False)
    assert replayed.status_code == 303
    new_id = int(replayed.headers["location"].rsplit("/", 1)[1])
    assert rota.job(new_id).replay_of == failed
    page = client.get(f"/jobs/{new_id}").text
    assert f'<a href="/jobs/{failed}">#{failed}</a>' in page
    assert f"/jobs/{new_id}/replay" not in page, "a pending job is not replayed"
    again = client.post(f"/jobs/{new_id}/replay", data=fields)
    assert again.status_code == 409 and "only a finished job" in again.text


def test_edit_a_pending_job_and_refuse_once_claimed(rota: Rota, clock: FakeClock) -> None:
    job_id = rota.queue("greet", "ada", tags=["old"])
    client = client_of(rota)
    fields = only_form(client.get(f"/jobs/{job_id}").text, f"/jobs/{job_id}/edit")
    later = (clock.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    edited = {**fields, "priority": "7", "queue": "urgent", "tags": "a, b", "run_at": later}
    assert client.post(f"/jobs/{job_id}/edit", data=edited).status_code == 200
    job = rota.job(job_id)
    assert (job.priority, job.queue, job.tags) == (7, "urgent", ("a", "b"))
    assert job.run_at == clock.now() + timedelta(hours=1)
    bad = client.post(f"/jobs/{job_id}/edit", data={**edited, "priority": "high"})
    assert bad.status_code == 400 and "priority" in bad.text

    clock.advance(timedelta(hours=2))
    claimed = rota.store.jobs.claim(
        "w:1", ["urgent"], ["greet"], 1, clock.now(), clock.now() + timedelta(seconds=60)
    )
    assert [claimed_job.id for claimed_job in claimed] == [job_id]
    refused = client.post(f"/jobs/{job_id}/edit", data={**edited, "priority": "1"})
    assert refused.status_code == 409 and "already claimed" in refused.text
    assert rota.job(job_id).priority == 7
    assert f"/jobs/{job_id}/edit" not in client.get(f"/jobs/{job_id}").text


def test_tags_and_meta_are_escaped(rota: Rota) -> None:
    job_id = rota.queue("greet", "ada", tags=[HOSTILE], meta={"note": "<script>x</script>"})
    client = client_of(rota)
    for page in (client.get(f"/jobs/{job_id}"), client.get("/jobs", params={"tag": HOSTILE})):
        assert page.status_code == 200
        assert HOSTILE not in page.text and "&lt;b&gt;x&lt;/b&gt;" in page.text
    detail = client.get(f"/jobs/{job_id}").text
    assert "<script>x" not in detail and "&lt;script&gt;x&lt;/script&gt;" in detail
    confirm = client.get("/bulk/pause", params={"tag": HOSTILE})
    assert HOSTILE not in confirm.text and "Pause 1 job matching tags &lt;b&gt;x" in confirm.text
