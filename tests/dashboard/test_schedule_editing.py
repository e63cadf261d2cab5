"""Editing schedules from the dashboard (issue 17): a schedule's page with its edit form, the
preview of the next runs, stale forms refused, overrides shown and reset, the history escaped,
failing schedules in red, and every change recorded as ``dashboard:<caller>``.

On SQLite alone: the compare-and-set and the history are the store's, tested on every backend
in ``tests/store``; what is tested here is the dashboard's side of them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urljoin

import httpx
import pytest
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Mount

from rota import JobContext, Rota
from rota.core.schedules import ScheduleAction
from rota.dashboard import create_app
from tests.conftest import Database
from tests.dashboard.forms import Forms
from tests.dashboard.serving import serving

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

TOKEN = "correct-horse-battery-staple"
XSS = "<script>alert(1)</script>"
PAGE = "/schedules/tick"
SAVE = PAGE + "/edit"
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return Database("sqlite", f"sqlite:///{tmp_path}/rota.db", "t_")


@pytest.fixture
def rota(make_rota: Callable[..., Rota]) -> Rota:
    """``tick``, defined in code (every 5 minutes in Berlin), and ``nightly``, at runtime; the
    clock is Monday 2026-03-02 09:00 UTC."""
    rota = make_rota()

    @rota.task(cron="*/5 * * * *", tz="Europe/Berlin")
    def tick(ctx: JobContext) -> None: ...

    rota.schedule("0 3 * * *", tick, name="nightly")
    rota.drain()
    return rota


def token_of(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found, page.text
    return found.group(1)


def save(
    client: TestClient, cron: str, tz: str = "UTC", version: str | None = None, page: str = PAGE
) -> httpx.Response:
    """Load the page and send its edit form with ``cron`` and ``tz`` (and the version the page
    gave it, unless ``version`` says otherwise)."""
    loaded = client.get(page)
    given = re.search(r'name="version" value="(\d+)"', loaded.text)
    assert given, loaded.text
    fields = {
        "csrf_token": token_of(loaded),
        "next": page,
        "cron": cron,
        "tz": tz,
        "version": given.group(1) if version is None else version,
    }
    response: httpx.Response = client.post(f"{page}/edit", data=fields, follow_redirects=False)
    return response


def test_the_page_shows_the_rule_its_form_a_preview_and_the_history(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    listing = client.get("/schedules")
    assert f'href="{PAGE}"' in listing.text
    page = client.get(PAGE)
    assert page.status_code == 200
    text = page.text
    assert 'name="cron" value="*/5 * * * *"' in text and 'name="tz" value="Europe/Berlin"' in text
    assert 'name="version" value="0"' in text and f'action="{SAVE}"' in text
    assert 'data-preview="/preview"' in text
    # The preview starts at the first tick at or after now, in Berlin and in UTC.
    assert "<td>2026-03-02 10:05+01:00</td><td>2026-03-02 09:05+00:00</td>" in text
    assert text.count("<tr><td>2026-03-02") == 5
    assert "Every fifth minute of every hour" in text
    history = text.split("<h2>History</h2>")[1]
    assert "<td>created</td>" in history and "<td>code</td>" in history
    assert client.get("/schedules/missing").status_code == 404
    assert client.get("/schedules/missing/edit").status_code == 404
    assert client.get(SAVE).text == text, "the page's former address"
    assert "<th>runs / failed, last 24 h</th>" in listing.text


def test_the_preview_gives_the_next_runs_or_the_error(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    runs = client.get("/preview", params={"cron": "0 12 * * 1-5", "tz": "America/New_York"})
    assert runs.status_code == 200
    assert "<td>2026-03-02 12:00-05:00</td><td>2026-03-02 17:00+00:00</td>" in runs.text
    assert runs.text.count("<tr><td>") == 5
    assert "<th>America/New_York (the schedule's zone)</th><th>UTC</th>" in runs.text
    in_utc = client.get("/preview", params={"cron": "@daily", "tz": ""}).text
    assert "<th>UTC (the schedule's zone)</th></tr>" in in_utc and in_utc.count("<th>") == 1
    assert "<tr><td>2026-03-03 00:00+00:00</td></tr>" in in_utc

    bad_cron = client.get("/preview", params={"cron": "61 * * * *", "tz": "UTC"})
    assert bad_cron.status_code == 200 and 'data-field="cron"' in bad_cron.text
    assert "bad minute field" in bad_cron.text and "<td>" not in bad_cron.text
    bad_zone = client.get("/preview", params={"cron": "@daily", "tz": "Mars/Olympus"})
    assert 'data-field="tz"' in bad_zone.text and "unknown time zone" in bad_zone.text
    hostile = client.get("/preview", params={"cron": XSS, "tz": "UTC"})
    assert XSS not in hostile.text and "&lt;script&gt;" in hostile.text


def test_saving_overrides_a_code_schedule_as_the_dashboard(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    saved = save(client, "0 12 * * *", "Asia/Tokyo")
    assert saved.status_code == 303 and saved.headers["location"] == PAGE
    schedule = rota.get_schedule("tick")
    assert (schedule.spec.cron, schedule.spec.tz) == ("0 12 * * *", "Asia/Tokyo")
    assert (schedule.code_cron, schedule.code_tz) == ("*/5 * * * *", "Europe/Berlin")
    (change, _) = rota.schedule_history("tick")
    assert change.action is ScheduleAction.OVERRIDDEN and change.actor == "dashboard:anonymous"
    assert change.new == {"cron": "0 12 * * *", "tz": "Asia/Tokyo"}

    page = client.get(PAGE).text
    assert 'class="overridden"' in page and '<code class="code-rule">*/5 * * * *</code>' in page
    assert "2026-03-03 12:00+09:00" in page.split('class="next-run"')[1].split("</dd>")[0]
    assert 'action="/schedules/tick/reset"' in page
    assert "<td>dashboard:anonymous</td>" in page and "*/5 * * * * → 0 12 * * *" in page
    listing = client.get("/schedules").text
    assert "overridden" in listing and '<code class="code-rule">*/5 * * * *</code>' in listing

    # A runtime schedule is updated, not overridden.
    assert save(client, "30 4 * * *", page="/schedules/nightly").status_code == 303
    assert rota.schedule_history("nightly")[0].action is ScheduleAction.UPDATED
    assert not rota.get_schedule("nightly").overridden


def test_saving_needs_the_csrf_token(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    client.get(PAGE)
    form = {"cron": "0 12 * * *", "tz": "UTC", "version": "0"}
    assert client.post(SAVE, data=form).status_code == 403
    assert client.post(SAVE, data={**form, "csrf_token": "0" * 64}).status_code == 403
    stolen = token_of(TestClient(create_app(rota), base_url="http://localhost").get(PAGE))
    assert client.post(SAVE, data={**form, "csrf_token": stolen}).status_code == 403
    assert client.post("/schedules/tick/reset", data={"version": "0"}).status_code == 403
    assert rota.get_schedule("tick").version == 0
    assert len(rota.schedule_history("tick")) == 1


@pytest.mark.parametrize(
    ("cron", "tz", "error", "invalid"),
    [
        ("61 * * * *", "UTC", "invalid cron expression &#39;61 * * * *&#39;: bad minute", "cron"),
        ("* * * * * *", "UTC", "a seconds field is not supported", "cron"),
        ("@daily", "Mars/Olympus", "unknown time zone &#39;Mars/Olympus&#39;", "tz"),
    ],
)
def test_a_rule_that_cannot_be_saved_is_shown_on_the_form(
    rota: Rota, cron: str, tz: str, error: str, invalid: str
) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    refused = save(client, cron, tz)
    assert refused.status_code == 400
    form = refused.text.split('class="edit-schedule"')[1].split("</form>")[0]
    problem = form.split('role="alert">')[1].split("</p>")[0]  # beside the rule it refused
    assert problem.startswith("Not saved: ") and error in problem
    assert "form-error" in form and f'data-field="{invalid}"' in form.split('class="preview"')[1]
    assert refused.text.count(error) == 1, "said once"
    assert f'name="{invalid}" value="' in form and 'aria-invalid="true"' in form
    assert f'value="{cron}"' in form and f'value="{tz}"' in form
    assert rota.get_schedule("tick").version == 0
    assert len(rota.schedule_history("tick")) == 1


def test_a_stale_form_is_refused_and_overwrites_nothing(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    loaded = client.get(PAGE)
    with rota.acting_as("admin:ana"):
        rota.update_schedule("tick", cron="0 6 * * *")
    fields = {"csrf_token": token_of(loaded), "cron": "0 12 * * *", "tz": "UTC", "version": "0"}
    stale = client.post(SAVE, data=fields, follow_redirects=False)
    assert stale.status_code == 409
    assert rota.get_schedule("tick").spec.cron == "0 6 * * *"
    message = stale.text.split('class="message error conflict" role="alert">')[1].split("</p>")[0]
    assert "Not saved: schedule &#39;tick&#39; was changed by admin:ana at 2026-03-02" in message
    assert "(version 0, now 1)" in message and "It now runs &#39;0 6 * * *&#39;" in message
    # The form keeps what was typed, at the version now in force: saving it again is a choice.
    assert 'name="cron" value="0 12 * * *"' in stale.text
    assert 'name="version" value="1"' in stale.text
    again = client.post(SAVE, data={**fields, "version": "1"}, follow_redirects=False)
    assert again.status_code == 303 and rota.get_schedule("tick").spec.cron == "0 12 * * *"

    for version in ("", "x", "99999999999999999999999999"):
        garbled = client.post(SAVE, data={**fields, "version": version})
        assert garbled.status_code == 409, version
        assert "does not say which version" in garbled.text
    assert rota.get_schedule("tick").version == 2


def test_reset_ends_the_override(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    assert save(client, "0 12 * * *").status_code == 303
    page = client.get(PAGE)
    (reset,) = [form for form in Forms(page.text).rows[""] if form.button == "Reset to code"]
    assert reset.action == "/schedules/tick/reset" and reset.fields["version"] == "1"
    assert reset.fields["next"] == PAGE
    done = client.post(reset.action, data=reset.fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == PAGE
    schedule = rota.get_schedule("tick")
    assert not schedule.overridden and schedule.spec.cron == "*/5 * * * *"
    change = rota.schedule_history("tick")[0]
    assert change.action is ScheduleAction.RESET and change.actor == "dashboard:anonymous"
    assert "Reset to code" not in client.get(PAGE).text

    again = client.post(reset.action, data={**reset.fields, "version": "2"})
    assert again.status_code == 409 and "is not overridden" in again.text
    assert save(client, "0 1 * * *").status_code == 303
    stale = client.post(reset.action, data=reset.fields)  # loaded at version 1, now 3
    assert stale.status_code == 409 and "was changed by dashboard:anonymous" in stale.text
    assert rota.get_schedule("tick").overridden


def test_an_ended_schedule_shows_its_history_but_no_form(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    token = token_of(client.get(PAGE))
    assert rota.cancel("nightly")
    page = client.get("/schedules/nightly")
    assert page.status_code == 200 and "edit-schedule" not in page.text
    assert "<td>cancelled</td>" in page.text and "active → cancelled" in page.text
    forced = client.post(
        "/schedules/nightly/edit",
        data={"csrf_token": token, "cron": "0 1 * * *", "tz": "UTC", "version": "0"},
    )
    assert forced.status_code == 409 and "is cancelled: it cannot change" in forced.text
    assert rota.get_schedule("nightly").spec.cron == "0 3 * * *"


def test_the_history_is_escaped(rota: Rota) -> None:
    with rota.acting_as(XSS):
        rota.pause("tick")
    rota.schedule("0 3 * * *", "tick", name=XSS)
    client = TestClient(create_app(rota), base_url="http://localhost")
    for path in (PAGE, f"/schedules/{quote(XSS, safe='')}"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert XSS not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_a_failing_schedule_is_shown_in_red(rota: Rota) -> None:
    assert rota.store.schedules.record_tick("tick", True, 1) == "failing"
    client = TestClient(create_app(rota), base_url="http://localhost")
    listing = client.get("/schedules").text
    assert '<tr id="schedule-tick" class="failing">' in listing
    assert '<tr id="schedule-nightly">' in listing
    assert listing.count('class="state state-failing"') == 1
    page = client.get(PAGE).text
    assert '<h1 class="failing">' in page and 'class="message error failing"' in page
    assert 'class="failing"' not in client.get("/schedules/nightly").text


def test_editing_needs_the_token_and_records_who_it_was(rota: Rota) -> None:
    app = create_app(rota, token=TOKEN)
    anonymous = TestClient(app)
    for path in (PAGE, "/preview?cron=@daily&tz=UTC"):
        assert anonymous.get(path).status_code == 401, path
    assert anonymous.post(SAVE, data={"cron": "@daily"}).status_code == 401
    assert anonymous.post("/schedules/tick/reset").status_code == 401

    bearer = TestClient(app, headers={"authorization": f"Bearer {TOKEN}"})
    assert bearer.get("/preview?cron=@daily&tz=UTC").status_code == 200
    assert save(bearer, "0 1 * * *").status_code == 303
    assert rota.schedule_history("tick")[0].actor == "dashboard:token"

    actors = []
    for _ in range(2):
        person = TestClient(app)
        form = person.get("/login")
        fields = {"csrf_token": token_of(form), "token": TOKEN}
        assert person.post("/login", data=fields, follow_redirects=False).status_code == 303
        for cron in ("0 2 * * *", "0 3 * * *"):
            assert save(person, cron).status_code == 303
            actors.append(rota.schedule_history("tick")[0].actor)
    assert all(re.fullmatch(r"dashboard:session-[0-9a-f]{12}", actor) for actor in actors)
    assert actors[0] == actors[1] != actors[2] == actors[3]
    assert not any(TOKEN in change.actor for change in rota.schedule_history("tick"))


def test_pausing_from_the_dashboard_is_recorded_as_the_dashboard(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    token = token_of(client.get(PAGE))
    paused = client.post(
        "/schedules/tick/pause", data={"csrf_token": token, "next": PAGE}, follow_redirects=False
    )
    assert paused.status_code == 303 and paused.headers["location"] == PAGE
    change = rota.schedule_history("tick")[0]
    assert (change.action, change.actor) == (ScheduleAction.PAUSED, "dashboard:anonymous")


USERS = ["ana", " bo\x00b\u202e ", "\x00", "x" * 300]


class Login(AuthenticationBackend):
    """An application's own login, for the test: user ``USERS[n]`` for ``X-User: n``."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        return AuthCredentials(["authenticated"]), SimpleUser(USERS[int(conn.headers["x-user"])])


def test_an_applications_user_is_the_actor(rota: Rota) -> None:
    """Control and format characters are dropped and the name cut short; with nothing left,
    the dashboard's own caller is recorded."""
    host = Starlette(
        routes=[Mount("/admin", create_app(rota))],
        middleware=[Middleware(AuthenticationMiddleware, backend=Login())],
    )
    expected = ["dashboard:ana", "dashboard:bob", "dashboard:anonymous", f"dashboard:{'x' * 200}"]
    for n, actor in enumerate(expected):
        client = TestClient(host, headers={"x-user": str(n)}, base_url="http://localhost")
        assert save(client, f"0 {n} * * *", page="/admin" + PAGE).status_code == 303
        assert rota.schedule_history("tick")[0].actor == actor


HOSTILE = ["../schedules/victim", "a/b", "x/edit", "x/edit/reset", "what?now", "100%", "a%2Fb"]


def test_each_schedules_form_edits_that_schedule_only(rota: Rota) -> None:
    """Names in the page's path stay one percent-encoded segment, in its links, its forms and
    the redirect back to it (through uvicorn, which decodes a path once as browsers expect)."""
    names = [*HOSTILE, "victim"]
    for name in names:
        rota.schedule("0 3 * * *", "tick", name=name)
    with serving(create_app(rota), probe="/schedules") as base, httpx.Client() as client:
        listing = f"{base}/schedules"
        links = Forms(client.get(listing).text).links
        for hour, name in enumerate(names, start=1):
            link = f"/schedules/{quote(name, safe='')}"
            assert link in links, name
            page = urljoin(listing, link)
            (form,) = [f for f in Forms(client.get(page).text).rows[""] if f.button == "Save"]
            fields = {**form.fields, "cron": f"0 {hour} * * *"}
            saved = client.post(urljoin(page, form.action), data=fields, follow_redirects=False)
            assert saved.status_code == 303, (name, saved.text)
            assert saved.headers["location"] == link
            crons = {n: rota.get_schedule(n).spec.cron for n in names}
            edited = names[:hour]
            assert crons == {
                n: f"0 {edited.index(n) + 1} * * *" if n in edited else "0 3 * * *" for n in names
            }, name


def test_the_page_shows_the_overlap_policy_and_the_codes_while_overridden(rota: Rota) -> None:
    client = TestClient(create_app(rota), base_url="http://localhost")
    facts = client.get(PAGE).text.split('<dl class="facts">')[1]
    assert '<dd class="overlap">skip <small>a tick is skipped while' in facts
    assert "· code:" not in facts.split('<dd class="overlap">')[1].split("</dd>")[0]
    rota.update_schedule("tick", overlap="queue")
    shown = client.get(PAGE).text.split('<dd class="overlap">')[1].split("</dd>")[0]
    assert shown.startswith("queue <small>a tick waits for the previous run to end")
    assert '· code: <span class="code-rule">skip</span>' in shown
