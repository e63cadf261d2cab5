"""The dashboard in a real browser: headless Chromium retries a failed job and edits a schedule.

Needs Debian's Chromium and the ``playwright`` package (``tests.browser``). Without them the
module is skipped, unless ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rota import JobContext, Rota
from rota.core.model import JobState, WorkerInfo
from rota.dashboard import create_app
from rota.testing import FakeClock
from tests.browser import chromium_page, missing
from tests.dashboard.serving import serving
from tests.helpers import sql_store
from tests.requirements import skipped_outside_ci

pytestmark = [pytest.mark.slow, skipped_outside_ci(missing())]


def test_retry_a_failed_job_from_the_browser(tmp_path: Path) -> None:
    rota = Rota(f"sqlite:///{tmp_path}/rota.db")
    attempts: list[int] = []

    @rota.task(retries=0)
    def flaky(ctx: JobContext, note: str) -> None:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RuntimeError(f"first try at {note} fails")

    @rota.task
    def greet(ctx: JobContext, name: str) -> None: ...

    rota.queue(greet, "ada")
    failed = rota.queue(flaky, "the report")
    rota.drain()
    job = rota.store.reads.job(failed)
    assert job is not None and job.state is JobState.FAILED

    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            from playwright.sync_api import expect

            page.goto(f"{base}/")
            assert page.title() == "Overview · rota"
            page.locator('a.card[href="/jobs?state=failed"]').click()
            page.wait_for_url(f"{base}/jobs?state=failed")
            rows = page.locator("table tbody tr")
            assert rows.count() == 1
            rows.get_by_role("link", name=str(failed), exact=True).click()
            page.wait_for_url(f"{base}/jobs/{failed}")
            state = page.locator("h1 .state")
            assert state.inner_text() == "failed"
            assert "first try at the report fails" in page.locator("details.error").inner_text()

            page.get_by_role("button", name="Retry").click()
            # The form posts, then redirects back here: wait for the new page, not the old one.
            expect(state).to_have_text("pending", timeout=10_000)
            assert page.url == f"{base}/jobs/{failed}"

            # Playwright's sync API keeps an event loop running in this thread; drain in another.
            with ThreadPoolExecutor(1) as pool:
                pool.submit(rota.drain).result(timeout=10)
            page.reload()
            expect(state).to_have_text("succeeded", timeout=10_000)
            assert page.get_by_role("button", name="Retry").count() == 0
    finally:
        sql_store(rota).engine.dispose()
    assert len(attempts) == 2


def test_a_waiting_workflow_shows_its_steps_and_is_cancelled_from_the_browser(
    tmp_path: Path,
) -> None:
    rota = Rota(f"sqlite:///{tmp_path}/rota.db")

    @rota.task
    def onboard(ctx: JobContext, user: str) -> None:
        ctx.step("create account", lambda: {"user": user, "id": 7})
        ctx.step("send welcome", lambda: f"mailed {user}")
        ctx.wait_for("verified", timeout=timedelta(days=2))

    job_id = rota.queue(onboard, "ada")
    rota.drain()
    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            from playwright.sync_api import expect

            page.goto(f"{base}/jobs/{job_id}")
            state = page.locator("h1 .state")
            assert state.inner_text() == "waiting"
            assert "signal verified" in page.locator("dd.waits-for").inner_text()
            steps = page.locator("ol.steps li.step")
            assert steps.count() == 2
            assert "create account" in steps.nth(0).inner_text()
            assert '"id": 7' in steps.nth(0).locator("pre").inner_text()
            assert "mailed ada" in steps.nth(1).inner_text()
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Cancel").click()
            expect(state).to_have_text("cancelled", timeout=10_000)
    finally:
        sql_store(rota).engine.dispose()


def test_filter_the_jobs_by_tag_and_retry_all_matching_from_the_browser(tmp_path: Path) -> None:
    """The filter bar's state is the URL's; "apply to all N matching" names the count, asks,
    and acts on every matching job, not on the page shown."""
    rota = Rota(f"sqlite:///{tmp_path}/rota.db")

    @rota.task(retries=0)
    def charge(ctx: JobContext, n: int) -> None:
        raise ValueError(f"declined {n}")

    for n in range(60):
        rota.queue(charge, n, tags=["tenant:acme" if n % 3 else "tenant:zeta"])
    rota.drain()
    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            page.goto(f"{base}/jobs")
            page.locator("form.filters input[name=tag]").last.fill("tenant:acme")
            page.locator("form.filters select[name=state]").select_option("failed")
            page.locator("form.filters button[type=submit]").click()
            page.wait_for_url("**/jobs?*tag=tenant%3Aacme*")
            assert "40 jobs match" in page.locator(".bulk .count").inner_text()
            page.get_by_role("link", name="Retry all 40 matching").click()
            assert "Retry 40 jobs" in page.locator("h1").inner_text()
            page.get_by_role("button", name="Retry 40 jobs").click()
            page.wait_for_load_state()
            assert "40" in page.content()
    finally:
        sql_store(rota).engine.dispose()
    assert rota.count(state="pending", tags=["tenant:acme"]) == 40
    assert rota.count(state="failed", tags=["tenant:zeta"]) == 20, "only the matching jobs"
    (action,) = rota.store.search.bulk_actions(5)
    assert (action.action, action.jobs) == ("retry", 40)
    assert action.actor.startswith("dashboard:")


def test_pausing_a_schedule_named_like_a_path_pauses_only_itself(tmp_path: Path) -> None:
    """Chromium resolves ``..`` in a form's action: the name must reach the server whole."""
    rota = Rota(f"sqlite:///{tmp_path}/rota.db")

    @rota.task
    def nightly(ctx: JobContext) -> None: ...

    hostile = "../schedules/victim"
    for name in ("victim", hostile):
        rota.schedule("0 3 * * *", nightly, name=name)

    def state(name: str) -> str:
        schedule = rota.store.schedules.get(name)
        assert schedule is not None
        return schedule.state.value

    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            from playwright.sync_api import expect

            page.goto(f"{base}/schedules")
            row = page.locator(f'tr[id="schedule-{hostile}"]')
            row.get_by_role("button", name="Pause").click()
            expect(row.get_by_role("button", name="Resume")).to_be_visible()
            assert page.url == f"{base}/schedules"
            assert page.locator('tr[id="schedule-victim"] button', has_text="Pause").count() == 1
        states = (state(hostile), state("victim"))
    finally:
        sql_store(rota).engine.dispose()
    assert states == ("paused", "active")


def test_edit_a_schedule_from_the_browser(tmp_path: Path) -> None:
    """Typing a cron previews its runs; saving moves the next run; a bad cron is refused with
    its error on the form and nothing written."""
    clock = FakeClock(datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock)

    @rota.task(cron="*/5 * * * *", tz="Europe/Berlin")
    def tick(ctx: JobContext) -> None: ...

    rota.drain()
    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            from playwright.sync_api import expect

            page.goto(f"{base}/schedules")
            page.locator('tr[id="schedule-tick"]').get_by_role("link", name="tick").click()
            page.wait_for_url(f"{base}/schedules/tick")
            preview = page.locator("form.edit-schedule .preview")
            expect(preview).to_contain_text("2026-03-02 10:05+01:00")

            cron = page.get_by_label("Cron")
            cron.clear()
            cron.press_sequentially("30 12 * * *", delay=15)  # one preview asked per key
            expect(preview.locator("tbody tr").first).to_have_text(
                "2026-03-02 12:30+01:00" + "2026-03-02 11:30+00:00"
            )
            expect(preview.locator("tbody tr")).to_have_count(5)
            with page.expect_navigation():  # to the page's load: its script listens again
                page.get_by_role("button", name="Save").click()
            next_run = page.locator("dd.next-run")
            expect(next_run).to_contain_text("2026-03-02 12:30+01:00 (2026-03-02 11:30+00:00)")
            expect(page.locator(".overridden").first).to_be_visible()
            assert page.url == f"{base}/schedules/tick"

            cron.fill("61 * * * *")
            error = preview.locator(".rule-error")
            expect(error).to_contain_text("bad minute field")
            expect(cron).to_have_attribute("aria-invalid", "true")
            with page.expect_navigation():
                page.get_by_role("button", name="Save").click()
            expect(page.locator(".form-error")).to_contain_text(
                "Not saved: invalid cron expression '61 * * * *': bad minute field"
            )
            expect(cron).to_have_value("61 * * * *")
            expect(next_run).to_contain_text("2026-03-02 12:30+01:00")
        schedule = rota.get_schedule("tick")
    finally:
        sql_store(rota).engine.dispose()  # last: a read after it would open a connection again
    assert (schedule.spec.cron, schedule.code_cron, schedule.version) == (
        "30 12 * * *",
        "*/5 * * * *",
        1,
    )


SCREENSHOTS = os.environ.get("ROTA_SCREENSHOTS")


@pytest.mark.skipif(not SCREENSHOTS, reason="set ROTA_SCREENSHOTS=<dir> to take screenshots")
def test_screenshots(tmp_path: Path) -> None:
    """Not a check: saves overview.png and schedules.png (1280x800) to $ROTA_SCREENSHOTS."""
    assert SCREENSHOTS
    start = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    clock = FakeClock(start - timedelta(hours=23))
    rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock)

    @rota.task(queue="mail")
    def send_email(ctx: JobContext, to: str) -> None: ...

    @rota.task(retries=0, queue="media")
    def resize_image(ctx: JobContext, image: int) -> None:
        if image % 7 == 3:
            raise OSError(f"image {image} is not a JPEG")

    @rota.task(cron="*/15 * * * *")
    def refresh_cache(ctx: JobContext) -> None: ...

    @rota.task(cron="0 3 * * *", tz="Europe/Berlin")
    def nightly_report(ctx: JobContext) -> None: ...

    @rota.task(retries=0)
    def sync_invoices(ctx: JobContext, account: str) -> None:
        if clock.now().hour % 5 == 0:
            raise ConnectionError(f"billing API refused account {account}")

    @rota.task
    def export_data(ctx: JobContext) -> None: ...

    rota.schedule("30 * * * *", sync_invoices, name="hourly-invoices", args=["acme"])
    rota.schedule("0 9 * * 1-5", send_email, name="weekday-digest", args=["team@example.com"])
    image = 0
    for hour in range(23):
        # Stop at :30 and :00 so that both cron ticks are due on time, not missed.
        clock.advance(timedelta(minutes=30))
        rota.drain()
        clock.advance(timedelta(minutes=30))
        for n in range(3 + (hour * 5) % 9):
            rota.queue(send_email, f"user{hour}-{n}@example.com")
        for _ in range(1 + hour % 4):
            image += 1
            rota.queue(resize_image, image)
        rota.drain()
    rota.pause("weekday-digest")
    for n in range(4):
        rota.queue(send_email, f"later{n}@example.com", delay=timedelta(minutes=10 + n))
    cancelled = rota.queue(export_data, delay=timedelta(hours=1))
    rota.cancel(cancelled)
    running = rota.queue(export_data)
    now = clock.now()
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="web-1:4321",
            host="web-1",
            pid=4321,
            queues=("default", "mail", "media"),
            tasks=("send_email", "resize_image", "export_data", "sync_invoices"),
            concurrency=8,
            started_at=now - timedelta(hours=5),
            heartbeat_at=now - timedelta(seconds=2),
        )
    )
    claimed = rota.store.jobs.claim(
        "web-1:4321", ["default"], ["export_data"], 1, now, now + timedelta(seconds=60)
    )
    assert [job.id for job in claimed] == [running]

    out = Path(SCREENSHOTS)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with serving(create_app(rota)) as base, chromium_page() as page:
            page.goto(f"{base}/")
            page.screenshot(path=str(out / "overview.png"))
            page.goto(f"{base}/schedules")
            page.screenshot(path=str(out / "schedules.png"))
    finally:
        sql_store(rota).engine.dispose()
