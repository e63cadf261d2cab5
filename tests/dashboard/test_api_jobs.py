"""The HTTP API's job routes: queue by name, show, list and search, and the actions; bad
input is a 4xx naming what is wrong, and nothing is written."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState
from rota.testing import FakeClock
from tests.dashboard.api_client import api_client, error_of

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def tasks(rota: Rota) -> Rota:
    @rota.task(retries=0)
    def greet(ctx: JobContext, name: str, punctuation: str = "!") -> str:
        if name == "boom":
            raise RuntimeError("no")
        return f"hello {name}{punctuation}"

    return rota


def test_queue_by_name_show_and_run(tasks: Rota, clock: FakeClock) -> None:
    client = api_client(tasks)
    body = {
        "task": "greet",
        "args": ["ada"],
        "kwargs": {"punctuation": "?"},
        "priority": -5,
        "queue": "mail",
        "unique_key": "ada-1",
        "delay": 30,
    }
    created = client.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    shown = client.get(f"/api/jobs/{job_id}").json()
    assert shown["args"] == ["ada"] and shown["kwargs"] == {"punctuation": "?"}
    assert (shown["state"], shown["queue"], shown["priority"]) == ("pending", "mail", -5)
    assert shown["unique_key"] == "ada-1"
    assert shown["run_at"] == (clock.now() + timedelta(seconds=30)).isoformat()
    clock.advance(30)
    tasks.drain("mail")
    done = client.get(f"/api/jobs/{job_id}").json()
    assert done["state"] == "succeeded" and done["result"] == "hello ada?"


def test_queue_at_a_moment_after_a_dependency(tasks: Rota, clock: FakeClock) -> None:
    client = api_client(tasks)
    first = client.post("/api/jobs", json={"task": "greet", "args": ["a"]}).json()["id"]
    at = (clock.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"task": "greet", "args": ["b"], "run_at": at, "depends_on": [first]}
    second = client.post("/api/jobs", json=body).json()["id"]
    job = tasks.job(second)
    assert job.run_at == clock.now() + timedelta(hours=1) and job.depends_on == (first,)


def test_a_task_this_process_does_not_define_is_queued_as_rota_queue_does(tasks: Rota) -> None:
    created = api_client(tasks).post("/api/jobs", json={"task": "elsewhere", "kwargs": {"a": 1}})
    assert created.status_code == 201
    job = tasks.job(created.json()["id"])
    assert (job.task, job.kwargs, job.state) == ("elsewhere", {"a": 1}, JobState.PENDING)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "must be a JSON object, got array"),
        (b'{"task": "greet", "args": [NaN]}', "not JSON"),
        (b"{}", "needs task"),
        (b'{"task": 7}', "task must be a string"),
        (b'{"task": "greet", "args": "ada"}', "args must be an array"),
        (b'{"task": "greet", "kwargs": []}', "kwargs must be an object"),
        (b'{"task": "greet", "args": ["a"], "priority": "1"}', "priority must be an integer"),
        (b'{"task": "greet", "args": ["a"], "priority": true}', "priority must be an integer"),
        (b'{"task": "greet", "args": ["a"], "priority": 5000}', "priority"),
        (b'{"task": "greet", "args": ["a"], "delay": -1}', "delay"),
        (b'{"task": "greet", "args": ["a"], "run_at": "tomorrow"}', "ISO 8601"),
        (b'{"task": "greet", "args": ["a"], "run_at": "2030-01-01T00:00:00"}', "UTC offset"),
        (b'{"task": "greet", "args": ["a"], "depends_on": ["1"]}', "depends_on"),
        (b'{"task": "greet", "args": ["a"], "depends_on": [999]}', "999"),
        (b'{"task": "greet", "args": ["a"], "retries": 3}', "unknown member 'retries'"),
        (b'{"task": "greet"}', "name"),  # bound to the handler: a missing argument
        (b'{"task": "greet", "args": ["a"], "kwargs": {"colour": 1}}', "colour"),
        (b'{"task": " greet"}', "whitespace"),
        (b'{"task": "greet", "args": ["a"], "queue": "q\\u0000"}', "control character"),
    ],
)
def test_bad_bodies_are_400_and_write_nothing(tasks: Rota, body: bytes, says: str) -> None:
    response = api_client(tasks).post(
        "/api/jobs", content=body, headers={"content-type": "application/json"}
    )
    assert says in error_of(response, 400, "INVALID_ARGUMENTS")
    assert tasks.counts().total == 0


def test_a_body_over_the_limit_is_413(tasks: Rota) -> None:
    huge = b'{"task": "greet", "args": ["' + b"x" * (4 * 1024 * 1024) + b'"]}'
    response = api_client(tasks).post("/api/jobs", content=huge)
    error_of(response, 413, "PAYLOAD_TOO_LARGE")
    assert tasks.counts().total == 0


def test_list_and_search(tasks: Rota) -> None:
    ids = [
        tasks.queue("greet", name, queue=queue)
        for name, queue in (("a", "default"), ("boom", "mail"), ("c", "mail"))
    ]
    tasks.queue("other", 1)
    tasks.drain()
    tasks.drain("mail")
    client = api_client(tasks)
    listed = client.get("/api/jobs").json()
    assert [job["id"] for job in listed["jobs"]] == [ids[2] + 1, *reversed(ids)]
    assert (listed["limit"], listed["offset"]) == (100, 0)
    failed = client.get("/api/jobs", params={"state": "failed"}).json()["jobs"]
    assert [job["id"] for job in failed] == [ids[1]]
    assert failed[0]["last_error"]["code"] == "EXECUTION_FAILED"
    assert (
        failed[0]["last_error"]["message"] == "RuntimeError: no"
        or "no" in failed[0]["last_error"]["message"]
    )
    both = client.get("/api/jobs?state=failed&state=pending").json()["jobs"]
    assert {job["id"] for job in both} == {ids[1], ids[2] + 1}
    mail = client.get("/api/jobs", params={"queue": "mail", "task": "greet"}).json()["jobs"]
    assert [job["id"] for job in mail] == [ids[2], ids[1]]
    page = client.get("/api/jobs", params={"limit": 2, "offset": 1}).json()["jobs"]
    assert [job["id"] for job in page] == [ids[2], ids[1]]
    assert "args" not in page[0]  # listings leave payloads out


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("state=bogus", "unknown state"),
        ("state=unknown", "unknown state"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("offset=10001", "offset"),
        ("task=%00x", "control character"),
        ("queue=" + "q" * 65, "queue must be 1 to 64"),
    ],
)
def test_bad_queries_are_400(tasks: Rota, query: str, says: str) -> None:
    assert says in error_of(api_client(tasks).get(f"/api/jobs?{query}"), 400, "INVALID_ARGUMENTS")


def test_actions_say_whether_they_changed_the_job(tasks: Rota) -> None:
    client = api_client(tasks)
    job_id = tasks.queue("greet", "a")
    paused = client.post(f"/api/jobs/{job_id}/pause").json()
    assert paused["changed"] is True and paused["job"]["state"] == "paused"
    assert client.post(f"/api/jobs/{job_id}/pause").json()["changed"] is False
    resumed = client.post(f"/api/jobs/{job_id}/resume").json()
    assert resumed["changed"] is True and resumed["job"]["state"] == "pending"
    assert client.post(f"/api/jobs/{job_id}/retry").json()["changed"] is False
    cancelled = client.post(f"/api/jobs/{job_id}/cancel").json()
    assert cancelled["changed"] is True and cancelled["job"]["state"] == "cancelled"
    assert client.post(f"/api/jobs/{job_id}/cancel").json()["changed"] is False
    retried = client.post(f"/api/jobs/{job_id}/retry").json()
    assert retried["changed"] is True and retried["job"]["state"] == "pending"
    assert tasks.job(job_id).state is JobState.PENDING


@pytest.mark.parametrize("path", ["", "/cancel", "/retry", "/pause", "/resume"])
@pytest.mark.parametrize("job_id", ["999", "abc", "0", "99999999999999999999999"])
def test_unknown_jobs_are_404(tasks: Rota, path: str, job_id: str) -> None:
    client = api_client(tasks)
    response = (
        client.get(f"/api/jobs/{job_id}") if not path else client.post(f"/api/jobs/{job_id}{path}")
    )
    assert job_id[:20] in error_of(response, 404, "JOB_NOT_FOUND")
