"""The HTTP API's searches and bulk actions (``GET /api/jobs`` with filters and cursors,
``/api/jobs/count``, ``/api/jobs/actions/{action}``) and the changes to one job (``PATCH``,
``DELETE``, ``replay``), with their scopes."""

from __future__ import annotations

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState
from tests.dashboard.api_client import READ, api_client, error_of

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def failing(rota: Rota) -> list[int]:
    """Five failed jobs, the odd orders tagged ``vip``, every one ``shop``."""

    @rota.task(retries=0)
    def charge(ctx: JobContext, order: int) -> None:
        raise RuntimeError(f"order {order}")

    ids = [
        rota.queue(charge, order, tags=["shop", *(["vip"] if order % 2 else [])], meta={"n": order})
        for order in range(5)
    ]
    rota.drain()
    return ids


def test_filters_narrow_and_cursors_page_without_overlap(rota: Rota, failing: list[int]) -> None:
    client = api_client(rota)
    vip = client.get("/api/jobs", params={"tag": ["shop", "vip"], "state": "failed,pending"})
    assert vip.status_code == 200, vip.text
    assert [job["id"] for job in vip.json()["jobs"]] == [failing[3], failing[1]]
    assert vip.json()["jobs"][0]["tags"] == ["shop", "vip"]
    assert vip.json()["jobs"][0]["meta"] == {"n": 3}
    assert vip.json()["next_cursor"] is None
    by_args = client.get("/api/jobs", params={"args": "[2]", "error_code": "EXECUTION_FAILED"})
    assert [job["id"] for job in by_args.json()["jobs"]] == [failing[2]]

    seen: list[int] = []
    cursor = None
    while True:
        params = {"limit": 2, "task": "charge", **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/jobs", params=params).json()
        seen += [job["id"] for job in page["jobs"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == failing[::-1]
    count = client.get("/api/jobs/count", params={"tag": "vip"})
    assert count.json() == {"count": 2}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("cursor=nonsense", "cursor"),
        ("created_after=yesterday", "ISO 8601"),
        ("error_code=lower", "upper case"),
        ("offset=5&tag=x", "takes no tag"),
        ("state=failed,bogus", "unknown state"),
    ],
)
def test_bad_search_queries_are_400(rota: Rota, query: str, says: str) -> None:
    rota.jobs()
    response = api_client(rota).get(f"/api/jobs?{query}")
    assert says in error_of(response, 400, "INVALID_ARGUMENTS")


def test_bulk_action_acts_on_the_filter_and_records_the_caller(
    rota: Rota, failing: list[int]
) -> None:
    client = api_client(rota)
    retried = client.post("/api/jobs/actions/retry", json={"filter": {"tags": ["vip"]}})
    assert retried.status_code == 200, retried.text
    assert retried.json() == {"jobs": 2}
    assert [rota.job(job_id).state for job_id in failing[1::2]] == [JobState.PENDING] * 2
    assert rota.job(failing[0]).state is JobState.FAILED
    (recorded,) = rota.store.search.bulk_actions(5)
    assert recorded.actor.startswith("api:token-") and recorded.filter == {"tags": ["vip"]}


def test_an_empty_filter_is_refused_unless_all_is_said(rota: Rota, failing: list[int]) -> None:
    client = api_client(rota)
    bodies: list[dict[str, object]] = [{}, {"filter": {}}, {"all": False}]
    for body in bodies:
        refused = client.post("/api/jobs/actions/delete", json=body)
        assert '"all": true' in error_of(refused, 400, "INVALID_ARGUMENTS")
    assert rota.count() == 5
    bad = client.post("/api/jobs/actions/retry", json={"filter": {"colour": "red"}})
    assert "colour" in error_of(bad, 400, "INVALID_ARGUMENTS")
    unknown = client.post("/api/jobs/actions/explode", json={"all": True})
    error_of(unknown, 404, "NOT_FOUND")
    everything = client.post("/api/jobs/actions/delete", json={"all": True})
    assert everything.json() == {"jobs": 5} and rota.count() == 0


def test_a_read_token_can_search_but_not_act(rota: Rota, failing: list[int]) -> None:
    reader = api_client(rota, sends=READ)
    assert reader.get("/api/jobs/count").json() == {"count": 5}
    for method, path, body in (
        ("POST", "/api/jobs/actions/retry", {"all": True}),
        ("PATCH", f"/api/jobs/{failing[0]}", {"priority": 1}),
        ("DELETE", f"/api/jobs/{failing[0]}", None),
        ("POST", f"/api/jobs/{failing[0]}/replay", None),
    ):
        response = reader.request(method, path, json=body)
        error_of(response, 403, "FORBIDDEN")
    assert rota.count(state="failed") == 5


def test_update_replay_and_delete_one_job(rota: Rota, failing: list[int]) -> None:
    client = api_client(rota)
    later = client.post(
        "/api/jobs",
        json={
            "task": "later",
            "delay": 600,
            "tags": ["a"],
            "meta": {"by": "api"},
            "unique_key": "later-1",
            "unique_for": 60,
        },
    ).json()["id"]
    assert rota.job(later).tags == ("a",) and rota.job(later).meta == {"by": "api"}
    edit = {"priority": -2, "queue": "slow", "tags": ["b", "c"], "run_at": "2030-01-01T00:00:00Z"}
    updated = client.patch(f"/api/jobs/{later}", json=edit)
    assert updated.status_code == 200, updated.text
    assert updated.json()["updated"] is True
    shown = updated.json()["job"]
    assert (shown["priority"], shown["queue"], shown["tags"]) == (-2, "slow", ["b", "c"])
    assert shown["run_at"].startswith("2030-01-01T00:00:00")
    final = client.patch(f"/api/jobs/{failing[0]}", json={"priority": 1}).json()
    assert final["updated"] is False
    nothing = client.patch(f"/api/jobs/{later}", json={})
    assert "changes nothing" in error_of(nothing, 400, "INVALID_ARGUMENTS")
    error_of(client.patch("/api/jobs/999999", json={"priority": 1}), 404, "JOB_NOT_FOUND")

    replayed = client.post(f"/api/jobs/{failing[1]}/replay")
    assert replayed.status_code == 201, replayed.text
    copy = client.get(f"/api/jobs/{replayed.json()['id']}").json()
    assert copy["replay_of"] == failing[1] and copy["tags"] == ["shop", "vip"]
    assert copy["state"] == "pending" and copy["stuck"] is False
    error_of(client.post(f"/api/jobs/{later}/replay"), 400, "INVALID_ARGUMENTS")

    assert client.delete(f"/api/jobs/{failing[0]}").json() == {"deleted": True}
    error_of(client.get(f"/api/jobs/{failing[0]}"), 404, "JOB_NOT_FOUND")
    error_of(client.delete(f"/api/jobs/{failing[0]}"), 404, "JOB_NOT_FOUND")


def test_the_document_lists_the_new_routes(rota: Rota) -> None:
    paths = api_client(rota).get("/api/openapi.json").json()["paths"]
    assert set(paths["/jobs/{job_id}"]) == {"get", "patch", "delete"}
    assert "post" in paths["/jobs/{job_id}/replay"] and "get" in paths["/jobs/count"]
    action = paths["/jobs/actions/{action}"]["post"]
    assert action["parameters"][0]["schema"]["enum"] == [
        "retry", "cancel", "pause", "resume", "delete",
    ]  # fmt: skip
    listed = {parameter["name"] for parameter in paths["/jobs"]["get"]["parameters"]}
    assert {"tag", "cursor", "created_after", "args", "error_code", "offset"} <= listed
