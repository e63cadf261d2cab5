"""Two services on one database, each with its own namespace: the same task name is two tasks,
each service syncs, disables, claims, pauses and counts only its own, and two live workers of
one namespace that define a task differently are reported, never silently overwritten."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from click.testing import CliRunner

from rota import ConfigError, JobContext, Rota
from rota.cli import main
from rota.testing import FakeClock
from tests.conftest import Database

Made = Callable[..., Rota]


def service(
    make_rota: Made, namespace: str, calls: list[str], cron: str = "0 3 * * *", **options: Any
) -> Rota:
    rota = make_rota(namespace=namespace, **options)

    @rota.task(cron=cron, name="cleanup")
    def cleanup() -> None:
        calls.append(namespace)

    @rota.task(name="send")
    def send(ctx: JobContext, to: str) -> None:
        calls.append(f"{namespace}:{to}")

    return rota


def test_the_same_task_name_in_two_namespaces_is_two_tasks(
    make_rota: Made, clock: FakeClock
) -> None:
    calls: list[str] = []
    billing = service(make_rota, "billing", calls, cron="0 3 * * *")
    shipping = service(make_rota, "shipping", calls, cron="0 4 * * *")
    billing.drain()
    shipping.drain()
    assert billing.inspect.schedule("cleanup").spec.cron == "0 3 * * *"  # type: ignore[union-attr]
    assert shipping.inspect.schedule("cleanup").spec.cron == "0 4 * * *"  # type: ignore[union-attr]

    clock.advance(18 * 3600)  # 03:00, billing's tick
    assert shipping.drain().succeeded == 0, "shipping's cleanup is not due at 03:00"
    assert billing.drain().succeeded == 1 and calls == ["billing"], "billing ran its own tick"
    clock.advance(3600)
    assert shipping.drain().succeeded == 1 and calls == ["billing", "shipping"]

    billing.queue("send", "a@example.com")
    assert shipping.drain().succeeded == 0, "a job of billing is not shipping's to claim"
    assert billing.drain().succeeded == 1 and calls[-1] == "billing:a@example.com"

    key = "order:1"
    assert billing.queue("send", "b", unique_key=key) != shipping.queue("send", "b", unique_key=key)
    assert billing.counts().by_task["send"] != shipping.counts().by_task["send"]


def test_a_service_disables_edits_and_pauses_only_its_own(make_rota: Made) -> None:
    calls: list[str] = []
    billing = service(make_rota, "billing", calls)
    service(make_rota, "shipping", calls).drain()
    billing.drain()
    restarted = make_rota(namespace="shipping")  # the release that dropped its cron task

    @restarted.task(name="send")
    def send(ctx: JobContext, to: str) -> None: ...

    restarted.drain()
    assert restarted.inspect.schedule("cleanup").state.value == "disabled"  # type: ignore[union-attr]
    assert billing.inspect.schedule("cleanup").state.value == "active"  # type: ignore[union-attr]

    billing.update_schedule("cleanup", cron="*/5 * * * *")
    history = restarted.schedule_history("cleanup")
    assert [change.action.value for change in history] == ["disabled", "created"], "newest first"
    billing.pause_queue("default")
    assert billing.paused_queues() == ["default"] and restarted.paused_queues() == []


@pytest.mark.sqlite_only
def test_a_namespace_is_a_name(make_rota: Made) -> None:
    for bad in ("", " billing", "a" * 65, "bill\ning"):
        with pytest.raises(ConfigError, match="namespace"):
            make_rota(namespace=bad)


@pytest.mark.sqlite_only
def test_the_namespace_comes_from_the_environment(
    make_rota: Made, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROTA_NAMESPACE", "billing")
    assert make_rota().namespace == "billing"
    assert make_rota(namespace="shipping").namespace == "shipping"


async def start_worker(rota: Rota) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    rota.on("worker.started", lambda event: seen.append(dict(event.fields)))
    rota.on("worker.definition_conflict", lambda event: seen.append(dict(event.fields)))
    await rota.start()
    return seen


@pytest.mark.sqlite_only
def test_a_worker_that_defines_a_task_differently_is_reported(make_rota: Made) -> None:
    calls: list[str] = []
    old = service(make_rota, "billing", calls, cron="0 3 * * *")
    new = service(make_rota, "billing", calls, cron="0 4 * * *")
    other = service(make_rota, "shipping", calls, cron="0 5 * * *")

    async def scenario() -> tuple[list[dict[str, Any]], ...]:
        try:
            return (
                await start_worker(old),
                await start_worker(other),
                await start_worker(new),
            )
        finally:
            for rota in (old, new, other):
                await rota.stop(grace=1)

    first, elsewhere, second = asyncio.run(scenario())
    assert [event.get("namespace") for event in first] == ["billing"]
    assert len(elsewhere) == 1, "another namespace's definitions are no conflict"
    started, conflict = second
    assert started["namespace"] == "billing"
    assert conflict["task"] == "cleanup" and conflict["worker"] == started["worker"]
    assert "cron: '0 4 * * *' / '0 3 * * *'" in conflict["differences"]


@pytest.mark.sqlite_only
def test_check_the_cli_and_the_dashboard_report_conflicts_per_namespace(
    make_rota: Made, db: Database
) -> None:
    """``rota check --namespace billing`` exits 1 naming the task; shipping's check is clean;
    the dashboard names its namespace and lists the conflict on its workers page."""
    from rota.dashboard import create_app
    from tests.dashboard.api_client import TestClient

    calls: list[str] = []
    now = FakeClock(datetime.now(timezone.utc))  # rota check reads the real time
    old = service(make_rota, "billing", calls, cron="0 3 * * *", clock=now)
    new = service(make_rota, "billing", calls, cron="0 4 * * *", clock=now)
    shipping = service(make_rota, "shipping", calls, clock=now)
    database = ["--url", db.url, "--table-prefix", db.prefix]

    def check(namespace: str) -> tuple[int, dict[str, Any]]:
        arguments = ["check", "--json", "--namespace", namespace, *database]
        result = CliRunner().invoke(main, arguments)
        return result.exit_code, json.loads(result.stdout)

    async def scenario() -> tuple[Any, ...]:
        for rota in (old, new, shipping):
            await rota.start()
        try:
            conflicts = [conflict.message() for conflict in old.inspect.conflicts()]
            page = TestClient(create_app(old), base_url="http://localhost").get("/workers")
            return conflicts, check("billing"), check("shipping"), page.text
        finally:
            for rota in (old, new, shipping):
                await rota.stop(grace=1)

    conflicts, billing, clean, page = asyncio.run(scenario())
    assert len(conflicts) == 1 and "task 'cleanup' is defined differently" in conflicts[0]
    code, report = billing
    assert code == 1 and report["namespace"] == "billing"
    assert [c["task"] for c in report["definition_conflicts"]] == ["cleanup"]
    assert any(p.startswith("DEFINITION_CONFLICT: task 'cleanup'") for p in report["problems"])
    assert len(report["workers"]) == 2, "the check sees the workers of its namespace only"
    code, report = clean
    assert (code, report["namespace"], len(report["workers"])) == (0, "shipping", 1)
    assert 'class="namespace"' in page and ">billing<" in page
    assert "Tasks live workers define differently" in page and "cleanup" in page
    assert old.inspect.conflicts() == [], "stopped workers conflict with nobody"


@pytest.mark.sqlite_only
def test_cli_commands_act_on_their_namespace(make_rota: Made, db: Database) -> None:
    calls: list[str] = []
    billing = service(make_rota, "billing", calls)
    billing.drain()
    database = ["--url", db.url, "--table-prefix", db.prefix]
    runner = CliRunner()
    listed = runner.invoke(main, ["schedules", "--json", "--namespace", "billing", *database])
    assert [row["name"] for row in json.loads(listed.stdout)] == ["cleanup"]
    other = runner.invoke(main, ["schedules", "--json", *database])
    assert json.loads(other.stdout) == [], "the default namespace has no schedules"
    paused = runner.invoke(
        main, ["pause", "--queue", "default", "--namespace", "billing", *database]
    )
    assert paused.exit_code == 0, paused.output
    assert billing.paused_queues() == ["default"]
    bad = runner.invoke(main, ["jobs", "--namespace", " x", *database])
    assert bad.exit_code == 2 and "namespace" in bad.output


def test_the_dashboard_and_the_api_filter_by_namespace(make_rota: Made) -> None:
    """The app's own namespace by default; another service's jobs, schedules and counts when
    asked (``namespace=``), its name offered on the jobs page; a bad name is a 400."""
    from tests.dashboard.api_client import TOKEN, api_client, error_of

    calls: list[str] = []
    billing = service(make_rota, "billing", calls)
    shipping = service(make_rota, "shipping", calls, cron="0 4 * * *")
    billing.drain()
    shipping.drain()
    sent = [shipping.queue("send", to) for to in ("a", "b")]
    mine = billing.queue("send", "c")
    assert billing.inspect.namespaces() == ["billing", "shipping"]

    api = api_client(billing)
    listed = api.get("/api/jobs").json()["jobs"]
    assert [job["id"] for job in listed] == [mine]
    listed = api.get("/api/jobs", params={"namespace": "shipping"}).json()["jobs"]
    assert sorted(job["id"] for job in listed) == sorted(sent)
    schedules = api.get("/api/schedules", params={"namespace": "shipping"}).json()["schedules"]
    assert [(s["name"], s["cron"]) for s in schedules] == [("cleanup", "0 4 * * *")]
    counts = api.get("/api/counts", params={"namespace": "shipping"}).json()
    assert counts["by_task"]["send"]["pending"] == 2
    assert api.get("/api/counts").json()["by_task"]["send"]["pending"] == 1
    bad = api.get("/api/jobs", params={"namespace": " x"})
    assert "namespace ' x' starts or ends with whitespace" in error_of(
        bad, 400, "INVALID_ARGUMENTS"
    )

    pages = api_client(billing, sends=TOKEN)
    page = pages.get("/jobs", params={"namespace": "shipping"}).text
    assert f'href="/jobs/{sent[0]}"' in page and f'href="/jobs/{mine}"' not in page
    assert '<option value="shipping" selected>' in page
    page = pages.get("/jobs").text
    assert f'href="/jobs/{mine}"' in page and f'href="/jobs/{sent[0]}"' not in page
    assert pages.get("/jobs", params={"namespace": "\u200bx"}).status_code == 400
