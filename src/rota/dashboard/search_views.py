"""What the jobs page shows once it is filtered by more than a listing can (tags, schedule, error
code, creation time, arguments), and the words a bulk action is confirmed and reported with.

The filter lives in the query string (``?state=failed&tag=tenant:acme&since=24h``), so a
filtered view is a URL to share; ``filter_of`` turns it into the ``Filter`` that ``rota.find``,
``rota.count`` and the bulk actions take, and ``filter_params`` turns a ``Filter`` back into
that query, so the confirmation page, its form and the page it returns to name the same jobs.
Filtered pages go by ``rota.find``'s keyset cursor: a page far back costs what the first does,
where the plain listing's ``OFFSET`` makes the database walk every row it skips.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from rota.app import Rota
from rota.core.model import JobState
from rota.core.search import Filter
from rota.dashboard import views
from rota.dashboard.views import BadQuery, shown
from rota.errors import InvalidArguments
from rota.store.values import JobSummary

SINCE = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
"""The "created since" choices the filter bar offers; any ISO 8601 time is taken too."""
SEARCH_KEYS = ("tag", "schedule", "error", "since", "args", "cursor")
"""Query keys the plain listing cannot serve: any of them makes the page a search."""
BULK_LISTED = 20
DONE = {
    "retry": "retried",
    "cancel": "cancelled",
    "pause": "paused",
    "resume": "resumed",
    "delete": "deleted",
}
"""The bulk actions the dashboard offers, and how the page reports one done."""


def is_search(params: QueryParams, query: views.JobsQuery) -> bool:
    """Whether ``/jobs`` is a search (``rota.find``) rather than the plain listing: a filter
    the listing has no index for, a cursor, or any of its own filters (a bulk action needs the
    exact count, and a search pages by cursor however far back it goes).  A job id is always
    that job alone."""
    if query.job_id is not None:
        return False
    listed = bool(query.states or query.task or query.queue)
    return listed or any(params.get(key, "").strip() for key in SEARCH_KEYS)


def since_of(text: str, now: datetime) -> datetime:
    """``since``: one of ``SINCE``'s choices back from ``now``, or an ISO 8601 time (UTC when
    it names no offset, as every time the dashboard shows is)."""
    if text in SINCE:
        return now - SINCE[text]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        choices = ", ".join(SINCE)
        raise BadQuery(f"since is {choices} or an ISO 8601 time, got {shown(text)}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def filter_of(
    params: QueryParams, query: views.JobsQuery, own_namespace: str, now: datetime
) -> Filter:
    """The ``Filter`` the query string names; a value no filter takes is a ``BadQuery``."""

    def text(key: str) -> str | None:
        return params.get(key, "").strip() or None

    since = text("since")
    given: dict[str, Any] = {
        "state": query.states,
        "task": query.task,
        "queue": query.queue,
        "tags": [tag.strip() for tag in params.getlist("tag") if tag.strip()],
        "schedule": text("schedule"),
        "error_code": text("error"),
        "created_after": None if since is None else since_of(since, now),
        "args_match": text("args"),
    }
    if query.namespace not in (None, own_namespace):
        given["namespace"] = query.namespace
    try:
        return Filter(**given)
    except InvalidArguments as error:
        raise BadQuery(str(error)) from None


def narrows(matching: Filter) -> bool:
    """Whether ``matching`` picks jobs out: a namespace alone names all of a service's jobs,
    which no bulk action from a page of them should reach."""
    return not Filter.from_json({**matching.to_json(), "namespace": None}).empty


def filter_params(matching: Filter) -> list[tuple[str, str]]:
    """The query string of ``/jobs`` naming ``matching``, the inverse of ``filter_of`` (a
    relative ``since`` comes back as the time it meant)."""
    pairs: list[tuple[str, str]] = [("state", state.value) for state in matching.state]
    pairs += [("task", task) for task in matching.task]
    pairs += [("queue", queue) for queue in matching.queue]
    pairs += [("tag", tag) for tag in matching.tags]
    for key, value in (
        ("schedule", matching.schedule),
        ("error", matching.error_code),
        ("args", matching.args_match if isinstance(matching.args_match, str) else None),
        ("namespace", matching.namespace),
    ):
        if value:
            pairs.append((key, value))
    if matching.created_after is not None:
        pairs.append(("since", matching.created_after.isoformat()))
    return pairs


def describe(matching: Filter) -> str:
    """The filter in words, for the confirmation page and the list of bulk actions."""
    parts = []
    for name, value in matching.to_json().items():
        if name == "args_match":
            path, wanted = value if isinstance(value, list) else ("", value)
            value = f"{path} = {json.dumps(wanted)}" if path else json.dumps(value)
        elif isinstance(value, list):
            value = (" and " if name == "tags" else " or ").join(value)
        parts.append(f"{name.replace('_', ' ')} {value}")
    return ", ".join(parts) or "every job"


def search_page(rota: Rota, params: QueryParams, query: views.JobsQuery) -> dict[str, Any]:
    """A page of the jobs the filter matches, newest first, the link to the next by cursor,
    the exact count, and the bulk actions it offers (none when it narrows nothing)."""
    matching = filter_of(params, query, rota.namespace, rota.clock.now())
    cursor = params.get("cursor", "").strip() or None
    try:
        page = rota.find(matching, limit=views.PER_PAGE, cursor=cursor)
        count = rota.count(matching)
    except InvalidArguments as error:
        raise BadQuery(str(error)) from None
    here = filter_params(matching)
    return {
        "jobs": [JobSummary.of(job) for job in page.jobs],
        "tags": {job.id: job.tags for job in page.jobs},
        "stuck": {job.id for job in page.jobs if job.stuck},
        "search": True,
        "count": count,
        "filter_query": urlencode(here),
        "bulk": list(DONE) if narrows(matching) else [],
        "cursor": cursor,
        "next_query": None
        if page.next_cursor is None
        else urlencode([*here, ("cursor", page.next_cursor)]),
    }


def filter_bar(params: QueryParams) -> dict[str, Any]:
    """What the filter bar shows of the new fields, as typed, and the notice a bulk action
    left (``done`` and ``jobs`` from its redirect)."""
    since = params.get("since", "").strip()
    done, jobs = params.get("done", ""), views.whole_number(params.get("jobs", ""))
    return {
        "bar": {
            "tags": [tag for tag in params.getlist("tag") if tag.strip()],
            "schedule": params.get("schedule", ""),
            "error": params.get("error", ""),
            "since": since,
            "args": params.get("args", ""),
        },
        "since_choices": list(SINCE),
        "notice": f"{jobs:,} jobs {DONE[done]}" if done in DONE and jobs is not None else None,
    }


def jobs_page(rota: Rota, params: QueryParams) -> dict[str, Any]:
    """``/jobs``: the plain listing (``views.jobs_page``) or, filtered, a search."""
    query = views.parse_jobs_query(params, params.getlist("state"))
    if is_search(params, query):
        page = {
            "states": list(JobState),
            "namespaces": rota.inspect.namespaces(),
            "prev_query": None,
            **search_page(rota, params, query),
        }
    else:
        listing = {"search": False, "tags": {}, "count": None, "bulk": [], "cursor": None}
        page = {**listing, **views.jobs_page(rota, query)}
    return {**page, "query": query, **filter_bar(params)}


def bulk_rows(rota: Rota, limit: int = BULK_LISTED) -> list[dict[str, Any]]:
    """The latest bulk actions, each with its filter in words and as a link to its jobs."""
    rows = []
    for action in rota.inspect.bulk_actions(limit):
        try:
            matching: Filter | None = Filter.from_json(action.filter)
        except InvalidArguments:
            matching = None  # a filter a newer rota wrote: shown as recorded
        rows.append(
            {
                "action": action,
                "described": describe(matching) if matching else json.dumps(action.filter),
                "query": urlencode(filter_params(matching)) if matching else None,
            }
        )
    return rows


def tag_list(text: str) -> list[str]:
    """Comma-separated tags as the edit form takes them, blanks dropped."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]
