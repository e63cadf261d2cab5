"""The shapes of the HTTP API's bodies and answers, as OpenAPI 3.0 schemas (``openapi`` puts
them in its document's ``components``); ``encoding`` writes the answers they describe."""

from __future__ import annotations

from typing import Any

from rota.core.model import JobState
from rota.core.schedules import ScheduleAction, ScheduleSource, ScheduleState

Schema = dict[str, Any]
STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
BOOL: Schema = {"type": "boolean"}
TIME: Schema = {"type": "string", "format": "date-time"}
ANY: Schema = {}
SECONDS: Schema = {"type": "number", "minimum": 1, "maximum": 366 * 86400}
JOB_STATES = [state.value for state in JobState if state is not JobState.UNKNOWN]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def null(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def obj(properties: dict[str, Schema], optional: tuple[str, ...] = ()) -> Schema:
    """A closed object whose members are all present but those in ``optional``."""
    required = [key for key in properties if key not in optional]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def tally(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


ERROR = obj({"error": obj({"code": STR, "message": STR})})
ATTEMPT_ERROR = obj(
    {"attempt": INT, "at": TIME, "code": STR, "type": STR, "message": STR, "traceback": STR}
)
PROGRESS = obj({"fraction": {"type": "number", "minimum": 0, "maximum": 1}, "note": null(STR)})
STATE = {
    "type": "string",
    "description": f"one of {', '.join(JOB_STATES)}, or the text of a "
    "state this rota does not know",
}
SUMMARY = obj(
    {
        "id": INT,
        "task": STR,
        "queue": STR,
        "state": STATE,
        "attempt": INT,
        "max_attempts": null(INT),
        "run_at": TIME,
        "started_at": null(TIME),
        "finished_at": null(TIME),
        "schedule": null(STR),
        "failures": INT,
        "last_error": null(ATTEMPT_ERROR),
        "progress": null(PROGRESS),
        "created_at": TIME,
        "tags": {"type": "array", "items": STR},
        "meta": null(tally(ANY)),
        "stuck": BOOL,
    },
    # A search's page has them; the older listing (``offset``) leaves them out.
    optional=("created_at", "tags", "meta", "stuck"),
)
TAGS: Schema = {"type": "array", "items": {**STR, "minLength": 1, "maxLength": 255}, "maxItems": 20}
META: Schema = {**tally(ANY), "description": "a JSON object of at most 4 KiB"}
JOB = obj(
    {
        "id": INT,
        "namespace": STR,
        "task": STR,
        "queue": STR,
        "state": STATE,
        "args": {"type": "array", "items": ANY},
        "kwargs": tally(ANY),
        "attempt": INT,
        "max_attempts": null(INT),
        "priority": INT,
        "run_at": TIME,
        "created_at": TIME,
        "started_at": null(TIME),
        "finished_at": null(TIME),
        "schedule": null(STR),
        "scheduled_at": null(TIME),
        "manual": BOOL,
        "unique_key": null(STR),
        "depends_on": {"type": "array", "items": INT},
        "cancel_requested": BOOL,
        "progress": null(PROGRESS),
        "result": {**ANY, "nullable": True},
        "errors": {"type": "array", "items": ATTEMPT_ERROR},
        "problem": null({**STR, "description": "why the stored row cannot be read"}),
        "waiting_for": null({**STR, "description": "the signal a waiting job waits for"}),
        "batch_id": null(INT),
        "tags": {"type": "array", "items": STR},
        "meta": null(tally(ANY)),
        "replay_of": null({**INT, "description": "the finished job this one replays"}),
        "stuck": {**BOOL, "description": "running past its timeout while heartbeating"},
        "steps": {
            "type": "array",
            "description": "its saved workflow steps, oldest first (GET of one job only)",
            "items": obj({"name": STR, "result": {**ANY, "nullable": True}, "finished_at": TIME}),
        },
    },
    optional=("steps",),
)
SCHEDULE = obj(
    {
        "name": STR,
        "task": STR,
        "cron": STR,
        "tz": STR,
        "queue": STR,
        "priority": INT,
        "source": {"type": "string", "enum": [source.value for source in ScheduleSource]},
        "state": {"type": "string", "enum": [state.value for state in ScheduleState]},
        "next_run_at": TIME,
        "last_run_at": null(TIME),
        "created_at": TIME,
        "updated_at": TIME,
        "overridden": BOOL,
        "code_cron": null(STR),
        "code_tz": null(STR),
        "version": INT,
        "failures": INT,
        "failing": BOOL,
    }
)
CHANGE = obj(
    {
        "schedule": STR,
        "at": TIME,
        "action": {"type": "string", "enum": [action.value for action in ScheduleAction]},
        "actor": STR,
        "old": null(tally(ANY)),
        "new": null(tally(ANY)),
    }
)
COUNTS = obj(
    {
        "by_state": tally(INT),
        "by_queue": tally(tally(INT)),
        "by_task": tally(tally(INT)),
        "finished_since": null(TIME),
        "total": INT,
    }
)
QUEUE = obj({"name": STR, "paused": BOOL, "counts": tally(INT)})
HEALTH = obj(
    {
        "status": {"type": "string", "enum": ["ok"]},
        "namespace": STR,
        "database": obj({"product": STR, "version": STR}),
        "schema": STR,
        "workers": INT,
    }
)
ENQUEUE = obj(
    {
        "task": {**STR, "minLength": 1, "maxLength": 255},
        "args": {"type": "array", "items": ANY},
        "kwargs": tally(ANY),
        "delay": {"type": "number", "minimum": 0, "description": "seconds from now"},
        "run_at": {**TIME, "description": "with its UTC offset"},
        "priority": {**INT, "minimum": -1000, "maximum": 1000, "description": "lower first"},
        "queue": {**STR, "minLength": 1, "maxLength": 64},
        "unique_key": {**STR, "minLength": 1, "maxLength": 255},
        "depends_on": {"type": "array", "items": {**INT, "minimum": 1}},
        "tags": TAGS,
        "meta": META,
        "debounce": {**SECONDS, "description": "move a pending job of the key instead"},
        "unique_for": {**SECONDS, "description": "keep the key taken after it finished"},
    },
    optional=(
        *("args", "kwargs", "delay", "run_at", "priority", "queue", "unique_key"),
        *("depends_on", "tags", "meta", "debounce", "unique_for"),
    ),
)
JOB_EDIT = obj(
    {
        "run_at": {**TIME, "description": "with its UTC offset"},
        "priority": {**INT, "minimum": -1000, "maximum": 1000},
        "queue": {**STR, "minLength": 1, "maxLength": 64},
        "tags": {**TAGS, "description": "replace its tags"},
        "meta": {**META, "description": "replace its metadata (at most 4 KiB)"},
    },
    optional=("run_at", "priority", "queue", "tags", "meta"),
)
NAMES: Schema = {"type": "array", "items": STR}
FILTER = obj(
    {
        "state": {"type": "array", "items": {"type": "string", "enum": JOB_STATES}},
        "task": NAMES,
        "queue": NAMES,
        "tags": {**NAMES, "description": "every one must be carried"},
        "schedule": STR,
        "namespace": STR,
        "error_code": STR,
        "created_after": TIME,
        "created_before": TIME,
        "finished_after": TIME,
        "finished_before": TIME,
        "args_match": {
            "description": "a substring of the arguments' JSON, or [path, value]",
            "oneOf": [STR, {"type": "array", "minItems": 2, "maxItems": 2}],
        },
    },
    optional=(
        *("state", "task", "queue", "tags", "schedule", "namespace", "error_code"),
        *("created_after", "created_before", "finished_after", "finished_before", "args_match"),
    ),
)
BULK = obj(
    {
        "filter": {**FILTER, "description": "as Filter.to_json() gives it"},
        "all": {**BOOL, "description": "true: an empty filter means every job"},
    },
    optional=("filter", "all"),
)
EDIT = obj(
    {"cron": STR, "tz": STR, "version": {**INT, "minimum": 0}},
    optional=("cron", "tz", "version"),
)
RESET = obj({"version": {**INT, "minimum": 0}}, optional=("version",))
SCHEMAS = {
    "Error": ERROR,
    "JobSummary": SUMMARY,
    "Job": JOB,
    "Schedule": SCHEDULE,
    "ScheduleChange": CHANGE,
    "Counts": COUNTS,
    "Queue": QUEUE,
    "Health": HEALTH,
    "Enqueue": ENQUEUE,
    "ScheduleEdit": EDIT,
    "ScheduleReset": RESET,
    "Created": obj({"id": INT}),
    "JobList": obj(
        {
            "jobs": {"type": "array", "items": ref("JobSummary")},
            "limit": INT,
            "offset": INT,
            "next_cursor": null({**STR, "description": "the next page's cursor; null: last"}),
        }
    ),
    "JobEdit": JOB_EDIT,
    "JobUpdated": obj({"updated": BOOL, "job": ref("Job")}),
    "Deleted": obj({"deleted": BOOL}),
    "Count": obj({"count": INT}),
    "Filter": FILTER,
    "BulkAction": BULK,
    "BulkResult": obj({"jobs": {**INT, "description": "how many jobs it changed"}}),
    "JobAction": obj({"changed": BOOL, "job": ref("Job")}),
    "Signal": obj(
        {"signal": {**STR, "minLength": 1, "maxLength": 190}, "payload": ANY},
        optional=("payload",),
    ),
    "Sent": obj({"sent": BOOL}),
    "ScheduleList": obj({"schedules": {"type": "array", "items": ref("Schedule")}}),
    "ScheduleActionResult": obj({"changed": BOOL, "schedule": ref("Schedule")}),
    "History": obj({"changes": {"type": "array", "items": ref("ScheduleChange")}}),
    "QueueList": obj({"queues": {"type": "array", "items": ref("Queue")}}),
    "QueueAction": obj({"changed": BOOL, "queue": STR, "paused": BOOL}),
}
