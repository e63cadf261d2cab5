"""Names in the dashboard's URLs are percent-encoded, so each button acts on its own name only
(issue 15, finding 5: a schedule named ``../schedules/victim`` used to pause ``victim``).

Buttons are pressed as a browser presses them: the form's action is taken from the rendered
page and resolved against the page's URL with ``urljoin``, which removes ``.`` and ``..``
segments as a browser does, and the form is posted, hidden fields and all, to a real uvicorn
(which decodes the path once; Starlette's test client would decode it twice).
"""

from __future__ import annotations

import warnings
from urllib.parse import quote, unquote, urlencode, urljoin, urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from rota import JobContext, Rota
from rota.core.schedules import ScheduleState
from rota.dashboard import create_app
from tests.dashboard.forms import Forms
from tests.dashboard.serving import serving

pytestmark = pytest.mark.sqlite_only

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

NAMES = [
    "../schedules/victim",
    "./victim",
    "a/../victim",
    "a/b",
    "x/pause",
    "x/pause/resume",
    "what?now",
    "tag#1",
    "100%",
    "a%2Fb",
    "%41",
    "with space",
    "a\\b",
    "plus+and&amp=",
    "ünïcødé/日本",
    "victim",  # pressed last, so that a button of another name reaching it shows
]


def press(client: httpx.Client, page: str, name: str, button: str) -> httpx.Response:
    """Load ``page`` and submit the form of ``button`` in schedule ``name``'s row."""
    forms = Forms(client.get(page).text).rows[f"schedule-{name}"]
    (form,) = [form for form in forms if form.button == button]
    return client.post(urljoin(page, form.action), data=form.fields, follow_redirects=False)


def states(rota: Rota) -> dict[str, ScheduleState]:
    return {schedule.name: schedule.state for schedule in rota.store.schedules.all()}


def with_schedules(rota: Rota, names: list[str]) -> Rota:
    @rota.task
    def nightly(ctx: JobContext) -> None: ...

    for name in names:
        rota.schedule("0 3 * * *", nightly, name=name)
    return rota


@pytest.mark.parametrize("prefix", ["", "/admin"])
def test_each_schedules_buttons_act_on_that_schedule_only(rota: Rota, prefix: str) -> None:
    with_schedules(rota, NAMES)
    app = create_app(rota)
    host = Starlette(routes=[Mount(prefix, app)]) if prefix else app
    active, paused = ScheduleState.ACTIVE, ScheduleState.PAUSED
    with serving(host, probe=f"{prefix}/schedules") as base, httpx.Client() as client:
        page = f"{base}{prefix}/schedules"
        pressed: list[str] = []
        for name in NAMES:
            response = press(client, page, name, "Pause")
            assert response.status_code == 303, (name, response.text)
            assert response.headers["location"] == f"{prefix}/schedules"
            pressed.append(name)
            expected = {n: paused if n in pressed else active for n in NAMES}
            assert states(rota) == expected, f"pausing {name!r}"
        for name in NAMES:
            assert press(client, page, name, "Resume").status_code == 303, name
            pressed.remove(name)
            expected = {n: paused if n in pressed else active for n in NAMES}
            assert states(rota) == expected, f"resuming {name!r}"
        for name in NAMES:
            assert press(client, page, name, "Run now").status_code == 303, name
        scheduled = [job.schedule for job in rota.store.reads.jobs(limit=None)]
        assert sorted(name for name in scheduled if name) == sorted(NAMES)
        html = client.get(page).text
        assert f'action="{prefix}/schedules/..%2Fschedules%2Fvictim/pause"' in html


@pytest.mark.parametrize("name", [".", ".."])
def test_a_name_of_dots_alone_changes_no_other_schedule(rota: Rota, name: str) -> None:
    """A browser resolves a ``.`` or ``..`` segment, even written ``%2E``, so no URL holds
    such a name as a path segment: its buttons cannot reach it, nor any other schedule."""
    with_schedules(rota, ["victim", "pause", name])
    with serving(create_app(rota), probe="/schedules") as base, httpx.Client() as client:
        page = f"{base}/schedules"
        for button in ("Pause", "Run now"):
            assert press(client, page, name, button).status_code in (404, 405)
    assert set(states(rota).values()) == {ScheduleState.ACTIVE}
    assert rota.store.reads.jobs() == []


def test_links_encode_names_in_paths_queries_and_fragments(rota: Rota) -> None:
    """Task, queue and schedule names with ``& = # % + ? /`` in them, followed from the links
    of the overview and of a job's page, list that job and no other."""
    task, queue, schedule = "a&task=b#c", "q/1?x=%41+", "s&=#/.. %"
    wanted = rota.queue(task, queue=queue)
    other = rota.queue("a", queue="q")
    with_schedules(rota, [schedule])
    scheduled = rota.run_now(schedule)
    client = TestClient(create_app(rota), base_url="http://localhost")
    overview = Forms(client.get("/").text).links
    stranded = f"/jobs?{urlencode({'state': 'pending', 'task': task, 'queue': queue})}"
    by_queue = f"/jobs?{urlencode({'queue': queue})}"
    for link in (stranded, by_queue):
        assert link in overview
        text = client.get(urljoin("http://localhost/", link)).text
        assert f'href="/jobs/{wanted}"' in text and f'href="/jobs/{other}"' not in text, link
    assert by_queue in Forms(client.get(f"/jobs/{wanted}").text).links
    job_page = Forms(client.get(f"/jobs/{scheduled}").text).links
    (fragment,) = [urlsplit(link).fragment for link in job_page if "#" in link]
    assert fragment == f"schedule-{quote(schedule, safe='')}"
    rows = Forms(client.get("/schedules").text).rows
    assert unquote(fragment) in rows, "the fragment, decoded as a browser does, names its row"
