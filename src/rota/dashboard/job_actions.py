"""The dashboard's actions on many jobs and the new ones on one: a bulk action on every job a
filter matches (confirmed on a page of its own first), replaying a finished job, and editing a
pending or paused one.

A bulk action is two requests: a GET that counts the jobs and asks, and the POST of that page's
form, which carries the filter as JSON (``Filter.to_json``: a relative "since" frozen into the
time it meant, so the jobs counted are the jobs acted on) with its CSRF token.  The POSTs run
through ``DashboardApp.action``: CSRF checked, inside ``rota.acting_as("dashboard:<caller>")``,
so each bulk action is recorded with who asked.  A filter that narrows nothing is refused: a
bulk action on every job is for code, not for a button.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from rota.app import Rota
from rota.core.model import FINAL_STATES, Job, JobState
from rota.core.search import Filter
from rota.dashboard import search_views, views
from rota.dashboard.paths import base_path
from rota.dashboard.rendering import Renderer
from rota.errors import InvalidArguments, JobNotFound

EDITABLE = (JobState.PENDING, JobState.PAUSED)
"""The states ``update_job`` changes a job in: a claimed job is its worker's."""
FORM_TIME = "%Y-%m-%dT%H:%M:%S"
"""A ``datetime-local`` input's value, in UTC as every time the dashboard shows."""


def job_id_of(request: Request) -> int:
    """The job the path names; a path that cannot name one is a job that does not exist."""
    job_id = views.parse_job_id(str(request.path_params["job_id"]))
    if job_id is None:
        raise JobNotFound(f"job {request.path_params['job_id']} does not exist")
    return job_id


def job_page(rota: Rota, job_id: int) -> dict[str, Any]:
    """``views.job_detail`` and what the job page shows of tags, meta and replays, with the
    values of its edit form."""
    detail = views.job_detail(rota, job_id)
    job: Job = detail["job"]
    return {
        **detail,
        "meta": None if job.meta is None else json.dumps(job.meta, indent=2, ensure_ascii=False),
        "can_replay": job.state in FINAL_STATES,
        "edit": edit_values(job) if job.state in EDITABLE else None,
    }


def edit_values(job: Job) -> dict[str, str]:
    return {
        "run_at": job.run_at.astimezone(timezone.utc).strftime(FORM_TIME),
        "priority": str(job.priority),
        "queue": job.queue,
        "tags": ", ".join(job.tags),
    }


def changes(job: Job, form: dict[str, str]) -> dict[str, Any]:
    """The ``update_job`` keywords of the fields the form changed: an unchanged field is left
    out, so the form's second-rounded time never moves a job by its microseconds."""
    shown = edit_values(job)
    changed: dict[str, Any] = {}
    run_at = form.get("run_at", "").strip()
    if run_at and run_at != shown["run_at"]:
        try:
            moment = datetime.fromisoformat(run_at)
        except ValueError:
            raise InvalidArguments(f"run at is a date and time, got {run_at!r}") from None
        changed["run_at"] = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    priority = form.get("priority", "").strip()
    if priority and priority != shown["priority"]:
        try:
            changed["priority"] = int(priority)
        except ValueError:
            raise InvalidArguments(f"priority is a whole number, got {priority!r}") from None
    queue = form.get("queue", "").strip()
    if queue and queue != shown["queue"]:
        changed["queue"] = queue
    tags = search_views.tag_list(form.get("tags", ""))
    if tuple(tags) != job.tags:
        changed["tags"] = tags
    return changed


class JobActions:
    """The endpoints of bulk actions, replays and edits over ``rota``."""

    def __init__(self, rota: Rota, renderer: Renderer) -> None:
        self.rota = rota
        self.renderer = renderer

    def confirm(self, request: Request, *, action: str) -> Response:
        """``/bulk/<action>?<filter>``: how many jobs the filter matches now, and the form that
        acts on them.  Each action has routes of its own, so no path names an unknown one."""
        params = request.query_params
        try:
            query = views.parse_jobs_query(params, params.getlist("state"))
            matching = search_views.filter_of(params, query, self.rota.namespace, self.now())
        except views.BadQuery as error:
            return self.renderer.error(request, 400, "Bad request", str(error))
        if not search_views.narrows(matching):
            return self.refuse_everything(request)
        context = {
            "action": action,
            "count": self.rota.count(matching),
            "described": search_views.describe(matching),
            "filter_json": json.dumps(matching.to_json(), ensure_ascii=False),
            "back": urlencode(search_views.filter_params(matching)),
        }
        return self.renderer.render(request, "bulk_confirm.html", context)

    def bulk(self, request: Request, form: dict[str, str], *, action: str) -> Response:
        """The confirmed action on every job the form's filter matches, then the filtered
        jobs page, saying how many changed."""
        try:
            matching = Filter.from_json(json.loads(form.get("filter") or "null"))
        except (ValueError, InvalidArguments) as error:
            return self.renderer.error(request, 400, "Bad request", f"No usable filter: {error}")
        if not search_views.narrows(matching):
            return self.refuse_everything(request)
        done: int = getattr(self.rota, action)(matching=matching)
        notice = [("done", action), ("jobs", str(done))]
        query = urlencode([*search_views.filter_params(matching), *notice])
        return RedirectResponse(f"{base_path(request)}/jobs?{query}", 303)

    def refuse_everything(self, request: Request) -> Response:
        return self.renderer.error(
            request,
            400,
            "Bad request",
            "A bulk action needs a filter: state, task, queue, tag, schedule, error code, "
            "creation time or arguments.",
        )

    def history(self, request: Request) -> Response:
        """``/bulk``: the latest bulk actions, who asked and how many jobs each changed."""
        context = {"actions": search_views.bulk_rows(self.rota)}
        return self.renderer.render(request, "bulk_actions.html", context)

    def replay(self, request: Request, form: dict[str, str]) -> Response | str:
        """A copy of a finished job, queued now: its page is where the redirect goes."""
        try:
            new_id = self.rota.replay(job_id_of(request))
        except InvalidArguments as error:
            return str(error)
        return RedirectResponse(f"{base_path(request)}/jobs/{new_id}", 303)

    def edit(self, request: Request, form: dict[str, str]) -> Response | str | None:
        """The edit form's changes to a pending or paused job; refused, and said so, once a
        worker claimed it (``update_job`` compares and sets on its state)."""
        job_id = job_id_of(request)
        job = self.rota.job(job_id)
        try:
            changed = changes(job, form)
            if changed and not self.rota.update_job(job_id, **changed):
                state = self.rota.job(job_id).state.value
                return f"job {job_id} was not changed: it is {state} (already claimed or over)"
        except InvalidArguments as error:
            return self.renderer.error(request, 400, "Not saved", str(error))
        return None

    def now(self) -> datetime:
        return self.rota.clock.now()
