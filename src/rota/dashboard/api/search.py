"""``/api/jobs`` searches and bulk actions: the listing's filter from query values, a page of
``rota.find`` with its cursor, ``rota.count``, and ``retry/cancel/pause/resume/delete`` on
every job a ``Filter`` (sent as ``Filter.to_json`` gives it) matches.

The listing also keeps its older form: given ``offset``, it pages as the dashboard does
(summaries from an offset), for clients written before cursors; ``offset`` cannot be mixed
with the search's own parameters, which that form does not take.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import Response

from rota.core.model import JobState
from rota.core.search import MAX_PAGE, Filter
from rota.dashboard.api import encoding
from rota.dashboard.api.replies import http_problem, moment, name, only, reply, typed, whole
from rota.dashboard.api.routing import Call
from rota.errors import InvalidArguments

MAX_OFFSET = 10_000
"""As the dashboard's pages: a deeper ``OFFSET`` makes the database walk every row it skips;
cursors and filters find older jobs."""
STATES = tuple(state.value for state in JobState if state is not JobState.UNKNOWN)
BOUNDS = ("created_after", "created_before", "finished_after", "finished_before")
SEARCH_ONLY = frozenset({"tag", "schedule", "error_code", "args", "cursor", *BOUNDS})
"""Query parameters of a search that the ``offset`` listing does not take."""
ACTIONS = ("retry", "cancel", "pause", "resume", "delete")
ACTION_MEMBERS = frozenset({"filter", "all"})


def several(query: QueryParams, key: str) -> list[str]:
    """A repeatable query value: ``state=a&state=b`` or ``state=a,b``."""
    return [part for value in query.getlist(key) for part in value.split(",") if part]


def filter_of(query: QueryParams) -> Filter:
    """The ``Filter`` the query's values say; ``InvalidArguments`` naming a bad one."""
    states = several(query, "state")
    for value in states:
        if value not in STATES:
            raise InvalidArguments(f"unknown state {value[:40]!r}: use one of {', '.join(STATES)}")
    given: dict[str, Any] = {
        "state": states,
        "task": [name(value, "task") for value in query.getlist("task") if value],
        "queue": [name(value, "queue") for value in query.getlist("queue") if value],
        "tags": [value for value in query.getlist("tag") if value],
        "schedule": name(query.get("schedule"), "schedule"),
        "namespace": query.get("namespace") or None,
        "error_code": query.get("error_code") or None,
        "args_match": query.get("args") or None,
    }
    for bound in BOUNDS:
        text = query.get(bound)
        given[bound] = moment(text, bound) if text else None
    return Filter(**given)


def search(call: Call) -> Response:
    """``GET /api/jobs``: the jobs the filter matches, newest first, ``limit`` (1 to 1000,
    default 100) a page, from ``cursor`` (the previous page's ``next_cursor``); with
    ``offset`` (at most 10,000), the older listing by ``state``, ``task`` and ``queue``."""
    query = call.query
    limit = whole(query.get("limit"), "limit", 100, 1, MAX_PAGE)
    if "offset" in query:
        mixed = sorted(SEARCH_ONLY & set(query))
        if mixed:
            raise InvalidArguments(f"offset pages the plain listing: it takes no {mixed[0]}")
        offset = whole(query.get("offset"), "offset", 0, 0, MAX_OFFSET)
        wanted = filter_of(query)
        task = wanted.task[0] if wanted.task else None
        queue = wanted.queue[0] if wanted.queue else None
        found = call.viewed.summaries(wanted.state, task, queue, limit, offset)
        listed = [encoding.summary(job) for job in found]
        return reply({"jobs": listed, "limit": limit, "offset": offset, "next_cursor": None})
    page = call.rota.find(filter_of(query), limit=limit, cursor=query.get("cursor") or None)
    return reply(
        {
            "jobs": [encoding.found(job) for job in page.jobs],
            "limit": limit,
            "offset": 0,
            "next_cursor": page.next_cursor,
        }
    )


def count(call: Call) -> Response:
    """``GET /api/jobs/count``: how many jobs the filter matches (what an action would reach)."""
    return reply({"count": call.rota.count(filter_of(call.query))})


def act(call: Call) -> Response:
    """``POST /api/jobs/actions/{action}``: the action on every job ``filter`` matches; how
    many it changed.  An empty filter reaches every job of the namespace, so it is refused
    unless the body also says ``"all": true``: a client that lost its filter must not retry or
    delete everything."""
    action = str(call.path["action"])
    if action not in ACTIONS:
        return http_problem(404, f"no action {action[:40]!r}: use one of {', '.join(ACTIONS)}")
    body = call.body
    only(body, ACTION_MEMBERS)
    every = typed(body, "all", bool, "a boolean") or False
    given = body.get("filter")
    matching = Filter.from_json({} if given is None else given)
    if matching.empty and not every:
        raise InvalidArguments(
            'an empty filter reaches every job: send "all": true to mean every job'
        )
    return reply({"jobs": getattr(call.rota, action)(matching=matching)})
