"""The OpenAPI 3 document of the HTTP API, served at ``/api/openapi.json``.

Written here as data, beside the routes it describes; a test checks that both name the same
routes, and a schemathesis run checks every answer against it.
"""

from __future__ import annotations

from typing import Any

from rota.core.schedules import ScheduleState
from rota.dashboard.api.replies import MAX_BODY_BYTES
from rota.dashboard.api.schemas import INT, JOB_STATES, SCHEMAS, STR, TIME, Schema, ref
from rota.dashboard.api.search import ACTIONS

ERRORS = {
    "400": "bad input (`INVALID_ARGUMENTS`, `INVALID_CRON`, `INVALID_TIMEZONE`)",
    "401": "no token, or one this API does not take (`UNAUTHORIZED`)",
    "403": "a `read` token on a route that needs `operate` (`FORBIDDEN`)",
    "404": "no such job, schedule or route (`JOB_NOT_FOUND`, `SCHEDULE_NOT_FOUND`, `NOT_FOUND`)",
    "409": "the schedule changed meanwhile (`SCHEDULE_CONFLICT`)",
    "413": f"a body over {MAX_BODY_BYTES} bytes (`PAYLOAD_TOO_LARGE`)",
    "429": "too many wrong tokens from this address (`TOO_MANY_REQUESTS`, `Retry-After`)",
    "503": "the database cannot be reached or used (`DATABASE_UNAVAILABLE`, `STORE_ERROR`)",
}


def answer(description: str, schema: Schema) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def parameter(name: str, where: str, schema: Schema, description: str) -> Schema:
    found = {
        "name": name,
        "in": where,
        "schema": schema,
        "description": description,
        "required": where == "path",
    }
    if schema.get("type") == "array":
        found.update(style="form", explode=True)
    return found


JOB_ID = parameter("job_id", "path", {**INT, "minimum": 1}, "the job's id")
SCHEDULE_NAME = parameter("name", "path", {**STR, "minLength": 1}, "the schedule's name")
QUEUE_NAME = parameter("name", "path", {**STR, "minLength": 1, "maxLength": 64}, "the queue")
NAMESPACE = parameter(
    "namespace", "query", {**STR, "maxLength": 64}, "another service's (default: the app's)"
)
ACTION = parameter(
    "action",
    "path",
    {"type": "string", "enum": list(ACTIONS)},
    "what to do to every matching job",
)
LIMIT = parameter(
    "limit", "query", {**INT, "minimum": 1, "maximum": 1000, "default": 100}, "at most this many"
)


def operation(
    summary: str,
    result: str,
    *,
    operate: bool = False,
    status: str = "200",
    parameters: tuple[Schema, ...] = (),
    body: str | None = None,
    errors: tuple[str, ...] = ("400", "404"),
) -> Schema:
    codes = ["401", "429", "503", *errors]
    if operate:
        codes.append("403")
    if body is not None:
        codes.append("413")
    found: Schema = {
        "summary": summary,
        "description": f"Scope: `{'operate' if operate else 'read'}`.",
        "parameters": list(parameters),
        "responses": {
            status: answer("done", ref(result)),
            **{code: answer(ERRORS[code], ref("Error")) for code in sorted(set(codes))},
        },
    }
    if body is not None:
        content = {"application/json": {"schema": ref(body)}}
        found["requestBody"] = {"required": body in ("Enqueue", "Signal"), "content": content}
    return found


def filters() -> tuple[Schema, ...]:
    """The query parameters of a search and of a count: ``Filter``'s fields."""
    state = {"type": "array", "items": {"type": "string", "enum": JOB_STATES}}
    names = {"type": "array", "items": STR}
    bounds = [
        parameter(f"{field}_{side}", "query", TIME, f"only jobs {field} {side} this moment")
        for field in ("created", "finished")
        for side in ("after", "before")
    ]
    return (
        parameter("state", "query", state, "only jobs in these states (or state=a,b)"),
        parameter("task", "query", names, "only jobs of these tasks"),
        parameter("queue", "query", names, "only jobs of these queues"),
        parameter("tag", "query", names, "only jobs carrying every one of these tags"),
        parameter("schedule", "query", STR, "only jobs of this schedule"),
        parameter("error_code", "query", STR, "only jobs whose last error has this code"),
        *bounds,
        parameter("args", "query", STR, "only jobs whose arguments' JSON holds this text"),
        NAMESPACE,
    )


def action(summary: str, result: str, parameter: Schema, body: str | None = None) -> Schema:
    return {"post": operation(summary, result, operate=True, parameters=(parameter,), body=body)}


def paths() -> dict[str, Schema]:
    schedule_state = {
        "type": "array",
        "items": {"type": "string", "enum": [s.value for s in ScheduleState]},
    }
    named = (SCHEDULE_NAME,)
    return {
        "/jobs": {
            "get": operation(
                "List and search jobs, newest first, a page at a time",
                "JobList",
                parameters=(
                    *filters(),
                    LIMIT,
                    parameter("cursor", "query", STR, "the previous page's next_cursor"),
                    parameter(
                        "offset",
                        "query",
                        {**INT, "minimum": 0, "maximum": 10000},
                        "skip this many (the older listing: state, task and queue only)",
                    ),
                ),
                errors=("400",),
            ),
            "post": operation(
                "Queue a job of a task, by its name",
                "Created",
                operate=True,
                status="201",
                body="Enqueue",
                errors=("400",),
            ),
        },
        "/jobs/count": {
            "get": operation(
                "How many jobs the filter matches", "Count", parameters=filters(), errors=("400",)
            )
        },
        "/jobs/actions/{action}": {
            "post": operation(
                "Act on every job a filter matches (an empty one needs all: true)",
                "BulkResult",
                operate=True,
                parameters=(ACTION,),
                body="BulkAction",
            )
        },
        "/jobs/{job_id}": {
            "get": operation("A job in full", "Job", parameters=(JOB_ID,), errors=("404",)),
            "patch": operation(
                "Change a pending or paused job (updated: false once claimed)",
                "JobUpdated",
                operate=True,
                parameters=(JOB_ID,),
                body="JobEdit",
            ),
            "delete": operation(
                "Delete a job that is not running nor waiting",
                "Deleted",
                operate=True,
                parameters=(JOB_ID,),
            ),
        },
        "/jobs/{job_id}/replay": {
            "post": operation(
                "Queue a copy of a finished job",
                "Created",
                operate=True,
                status="201",
                parameters=(JOB_ID,),
            )
        },
        "/jobs/{job_id}/cancel": action("Cancel a job", "JobAction", JOB_ID),
        "/jobs/{job_id}/retry": action("Retry a failed or cancelled job", "JobAction", JOB_ID),
        "/jobs/{job_id}/pause": action("Pause a pending job", "JobAction", JOB_ID),
        "/jobs/{job_id}/resume": action("Resume a paused job", "JobAction", JOB_ID),
        "/jobs/{job_id}/signal": action(
            "Send a signal to a job (ctx.wait_for)", "Sent", JOB_ID, body="Signal"
        ),
        "/schedules": {
            "get": operation(
                "Every schedule, by name",
                "ScheduleList",
                parameters=(
                    parameter("state", "query", schedule_state, "only schedules in these states"),
                    NAMESPACE,
                ),
                errors=("400",),
            )
        },
        "/schedules/{name}": {
            "get": operation("A schedule", "Schedule", parameters=named, errors=("404",)),
            "patch": operation(
                "Change its cron and/or time zone",
                "Schedule",
                operate=True,
                parameters=named,
                body="ScheduleEdit",
                errors=("400", "404", "409"),
            ),
        },
        "/schedules/{name}/run-now": {
            "post": operation(
                "Queue one run of the schedule now",
                "Created",
                operate=True,
                status="201",
                parameters=named,
            )
        },
        "/schedules/{name}/pause": action(
            "Pause a schedule", "ScheduleActionResult", SCHEDULE_NAME
        ),
        "/schedules/{name}/resume": action(
            "Resume a schedule", "ScheduleActionResult", SCHEDULE_NAME
        ),
        "/schedules/{name}/reset": {
            "post": operation(
                "End a code schedule's override",
                "ScheduleActionResult",
                operate=True,
                parameters=named,
                body="ScheduleReset",
                errors=("400", "404", "409"),
            )
        },
        "/schedules/{name}/history": {
            "get": operation(
                "Its changes, newest first", "History", parameters=(SCHEDULE_NAME, LIMIT)
            )
        },
        "/queues": {"get": operation("Queues with jobs or paused", "QueueList", errors=())},
        "/queues/{name}/pause": action("Stop claims from a queue", "QueueAction", QUEUE_NAME),
        "/queues/{name}/resume": action("Claim from a queue again", "QueueAction", QUEUE_NAME),
        "/counts": {
            "get": operation(
                "Exact job counts",
                "Counts",
                parameters=(
                    parameter(
                        "finished_since", "query", TIME, "count finished jobs from then only"
                    ),
                    NAMESPACE,
                ),
                errors=("400",),
            )
        },
        "/health": {"get": operation("Whether the database is usable", "Health", errors=())},
    }


def document(server: str) -> dict[str, Any]:
    """The document, for the API served at ``server`` (a path: where it is mounted)."""
    from rota import __version__

    return {
        "openapi": "3.0.3",
        "info": {
            "title": "rota HTTP API",
            "version": __version__,
            "description": "Jobs, schedules and queues of one rota database. Every route but "
            "this document needs `Authorization: Bearer <token>`: a `read` token lists and "
            "shows, an `operate` token (the dashboard's, or one given the scope) also changes. "
            'Errors are `{"error": {"code", "message"}}`.',
        },
        "servers": [{"url": server or "/"}],
        "security": [{"bearer": []}],
        "paths": paths()
        | {
            "/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "the OpenAPI document",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
                    },
                }
            }
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
