"""The tables and indexes rota keeps, as SQLAlchemy Core metadata named with a table prefix.

The Alembic migrations build the same schema step by step; a test compares the two on every
dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    false,
    text,
)

from rota.core import cron
from rota.core.connection import DEFAULT_NAMESPACE, DEFAULT_TABLE_PREFIX
from rota.core.names import LIMITS
from rota.store.types import BigId, LongText, UtcDateTime

ACTOR_LENGTH = LIMITS["actor"]
"""Longest actor recorded in a schedule's history (``dashboard:<user>`` and the like)."""
ERROR_CODE_LENGTH = 32
"""An error code (``TIMEOUT``) as the last failed attempt recorded it, for ``find``."""
FLOW_KEY_LENGTH = 255
"""Longest concurrency or rate key stored; longer keys are stored as a digest."""

FINISHED_INDEX = ("finished_at", "namespace", "state", "queue", "task")
"""The finished-jobs index holds what counting them groups by, so the windowed counts and the
dashboard's chart read the index alone, never a row; the prune's oldest-first scan uses its
first column."""

TICK_KEY = ("namespace", "schedule", "scheduled_at", "tick")
"""One job per tick (invariant 1): ``tick`` is TRUE for a cron tick's job and NULL for any other
job, a manual run included; every backend holds NULLs distinct in a unique index, so manual runs
never meet the key, not even two of them at a tick's own moment.  A schedule is named within its
namespace, so its ticks are too."""
TASK_SET_KEY_LENGTH = 64
"""A task set's key: the SHA-256 of its sorted names, in hex (``store.task_sets``)."""
CLAIM_INDEX = ("namespace", "state", "queue", "priority", "run_at", "id")
"""A worker claims the due jobs of its own namespace, by queue, in priority, time and id order:
the index holds the whole order, so a claim across queues reads their best keys from it alone."""
STEP_NAME_LENGTH = 255
"""A saved step's name: the name given (``LIMITS["step"]``) and its occurrence (``#12``)."""
UNIQUE_KEY = ("namespace", "task", "unique_key")
"""A unique key is scoped per task, and a task per namespace."""


def namespace_column() -> Column[str]:
    """The namespace a row belongs to; rows written before namespaces existed are the default
    one's."""
    return Column(
        "namespace",
        String(LIMITS["namespace"]),
        nullable=False,
        server_default=DEFAULT_NAMESPACE,
    )


TABLE_OPTIONS = {"engine": "InnoDB", "charset": "utf8mb4", "collate": "utf8mb4_bin"}
"""Every table on MySQL and MariaDB: InnoDB, and text compared byte for byte (task and queue
names, unique keys and schedule names are told apart by case)."""
MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    f"{dialect}_{option}": value
    for dialect in ("mysql", "mariadb")
    for option, value in TABLE_OPTIONS.items()
}
"""``TABLE_OPTIONS`` under both of SQLAlchemy's names: its MariaDB dialect (a ``mariadb://``
URL, whatever the driver) reads only ``mariadb_`` options, its MySQL dialect ``mysql_`` ones."""


@dataclass(frozen=True)
class Schema:
    metadata: MetaData
    jobs: Table
    workers: Table
    schedules: Table
    leases: Table
    queues: Table
    dependencies: Table
    limits: Table
    schedule_history: Table
    tallies: Table
    tally_mark: Table
    task_sets: Table
    hour_tallies: Table
    steps: Table
    signals: Table
    batches: Table
    wait_deadlines: Table
    job_tags: Table
    bulk_actions: Table


def jobs_channel(prefix: str) -> str:
    """The PostgreSQL ``NOTIFY`` channel on which the jobs table announces inserted jobs."""
    return f"{prefix}jobs"


def notify_function(prefix: str) -> str:
    """The PostgreSQL trigger function (and trigger) that sends on ``jobs_channel``."""
    return f"{prefix}notify_new_jobs"


def job_tag_columns(prefix: str) -> list[Any]:
    """A job's tags, a row each, found by tag newest job first (``rota.find(tags=...)``)."""
    return [
        Column("job_id", BigId, primary_key=True, autoincrement=False),
        Column("tag", String(LIMITS["tag"]), primary_key=True),
        namespace_column(),
        Index(f"ix_{prefix}job_tags_tag", "namespace", "tag", "job_id"),
    ]


def bulk_action_columns() -> list[Any]:
    """What a bulk action did (``retry(matching=...)`` and the like): who, which filter, how
    many jobs."""
    return [
        Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        Column("at", UtcDateTime, nullable=False),
        Column("actor", String(ACTOR_LENGTH), nullable=False),
        Column("action", String(16), nullable=False),
        Column("filter", LongText, nullable=False),
        Column("jobs", BigInteger, nullable=False),
    ]


def build_schema(prefix: str = DEFAULT_TABLE_PREFIX) -> Schema:
    metadata = MetaData()
    jobs = Table(
        f"{prefix}jobs",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        Column("task", String(LIMITS["task"]), nullable=False),
        Column("queue", String(LIMITS["queue"]), nullable=False),
        Column("priority", Integer, nullable=False),
        Column("state", String(16), nullable=False),
        Column("payload", LongText, nullable=False),
        Column("attempt", Integer, nullable=False),
        Column("max_attempts", Integer, nullable=True),
        Column("run_at", UtcDateTime, nullable=False),
        Column("created_at", UtcDateTime, nullable=False),
        Column("started_at", UtcDateTime, nullable=True),
        Column("finished_at", UtcDateTime, nullable=True),
        Column("lease_owner", String(64), nullable=True),
        Column("lease_until", UtcDateTime, nullable=True),
        Column("cancel_requested", Boolean, nullable=False, server_default=false()),
        Column("errors", LongText, nullable=True),
        Column("schedule", String(LIMITS["schedule"]), nullable=True),
        Column("scheduled_at", UtcDateTime, nullable=True),
        Column("tick", Boolean, nullable=True),
        Column("unique_key", String(LIMITS["unique_key"]), nullable=True),
        Column("result", LongText, nullable=True),
        Column("progress", Float, nullable=True),
        Column("progress_note", String(255), nullable=True),
        Column("snoozes", Integer, nullable=False, server_default=text("0")),
        Column("concurrency_key", String(FLOW_KEY_LENGTH), nullable=True),
        Column("rate_key", String(FLOW_KEY_LENGTH), nullable=True),
        Column("has_dependencies", Boolean, nullable=False, server_default=false()),
        Column("has_workflow", Boolean, nullable=False, server_default=false()),
        Column("waiting_for", String(LIMITS["signal"]), nullable=True),
        Column("batch_id", BigId, nullable=True),
        Column("meta", LongText, nullable=True),
        Column("error_code", String(ERROR_CODE_LENGTH), nullable=True),
        Column("unique_for", Integer, nullable=True),
        Column("replay_of", BigId, nullable=True),
        Column("stuck_attempt", Integer, nullable=True),
        Index(f"ix_{prefix}jobs_claim", *CLAIM_INDEX),
        Index(f"ix_{prefix}jobs_concurrency", "concurrency_key", "state"),
        Index(f"ix_{prefix}jobs_lease", "lease_until"),
        Index(f"ix_{prefix}jobs_finished", *FINISHED_INDEX),
        Index(f"uq_{prefix}jobs_tick", *TICK_KEY, unique=True),
        Index(f"uq_{prefix}jobs_unique_key", *UNIQUE_KEY, unique=True),
        Index(f"ix_{prefix}jobs_batch", "batch_id"),
        Index(f"ix_{prefix}jobs_task", "namespace", "task", "id"),
        Index(f"ix_{prefix}jobs_created", "namespace", "created_at"),
        Index(f"ix_{prefix}jobs_error", "namespace", "error_code", "id"),
        **MYSQL_TABLE_OPTIONS,
    )
    workers = Table(
        f"{prefix}workers",
        metadata,
        Column("id", String(64), primary_key=True),
        namespace_column(),
        Column("host", String(255), nullable=False),
        Column("pid", Integer, nullable=False),
        Column("queues", LongText, nullable=False),
        Column("tasks", LongText, nullable=False),
        Column("concurrency", Integer, nullable=False),
        Column("started_at", UtcDateTime, nullable=False),
        Column("heartbeat_at", UtcDateTime, nullable=False),
        Column("heartbeat_seconds", Float, nullable=True),
        Column("definitions", LongText, nullable=True),
        Index(f"ix_{prefix}workers_heartbeat", "heartbeat_at"),
        **MYSQL_TABLE_OPTIONS,
    )
    schedules = Table(
        f"{prefix}schedules",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        Column("name", String(LIMITS["schedule"]), nullable=False),
        Column("task", String(LIMITS["task"]), nullable=False),
        Column("cron", String(cron.MAX_LENGTH), nullable=False),
        Column("tz", String(cron.MAX_ZONE_LENGTH), nullable=False),
        Column("payload", LongText, nullable=False),
        Column("queue", String(LIMITS["queue"]), nullable=False),
        Column("priority", Integer, nullable=False),
        Column("source", String(8), nullable=False),
        Column("state", String(16), nullable=False),
        Column("next_run_at", UtcDateTime, nullable=False),
        Column("last_run_at", UtcDateTime, nullable=True),
        Column("created_at", UtcDateTime, nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
        Column("code_cron", String(cron.MAX_LENGTH), nullable=True),
        Column("code_tz", String(cron.MAX_ZONE_LENGTH), nullable=True),
        Column("version", Integer, nullable=False, server_default=text("0")),
        Column("failures", Integer, nullable=False, server_default=text("0")),
        Column("failing", Boolean, nullable=False, server_default=false()),
        Column("overlap", String(8), nullable=False, server_default=text("'skip'")),
        Column("code_overlap", String(8), nullable=True),
        Index(f"uq_{prefix}schedules_name", "namespace", "name", unique=True),
        Index(f"ix_{prefix}schedules_due", "namespace", "state", "next_run_at"),
        **MYSQL_TABLE_OPTIONS,
    )
    leases = Table(
        f"{prefix}leases",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("name", String(64), primary_key=True),
        Column("owner", String(64), nullable=False),
        Column("until", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    queues = Table(
        f"{prefix}queues",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("name", String(LIMITS["queue"]), primary_key=True),
        Column("paused", Boolean, nullable=False, server_default=false()),
        Column("updated_at", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    dependencies = Table(
        f"{prefix}dependencies",
        metadata,
        Column("job_id", BigId, primary_key=True, autoincrement=False),
        Column("depends_on", BigId, primary_key=True, autoincrement=False),
        Column("until_final", Boolean, nullable=False, server_default=false()),
        Index(f"ix_{prefix}dependencies_depends_on", "depends_on"),
        **MYSQL_TABLE_OPTIONS,
    )
    limits = Table(
        f"{prefix}limits",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("key", String(FLOW_KEY_LENGTH), primary_key=True),
        Column("tokens", Float, nullable=True),
        Column("updated_at", UtcDateTime, nullable=True),
        **MYSQL_TABLE_OPTIONS,
    )
    schedule_history = Table(
        f"{prefix}schedule_history",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        Column("schedule", String(LIMITS["schedule"]), nullable=False),
        Column("at", UtcDateTime, nullable=False),
        Column("action", String(32), nullable=False),
        Column("actor", String(ACTOR_LENGTH), nullable=False),
        Column("old", LongText, nullable=True),
        Column("new", LongText, nullable=True),
        Index(f"ix_{prefix}schedule_history_schedule", "namespace", "schedule", "id"),
        Index(f"ix_{prefix}schedule_history_at", "at"),
        **MYSQL_TABLE_OPTIONS,
    )
    tallies = Table(
        f"{prefix}tallies",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("state", String(16), primary_key=True),
        Column("queue", String(LIMITS["queue"]), primary_key=True),
        Column("task", String(LIMITS["task"]), primary_key=True),
        Column("jobs", BigInteger, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    tally_mark = Table(
        f"{prefix}tally_mark",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("folded_until", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    hour_tallies = Table(
        f"{prefix}hour_tallies",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("hour", UtcDateTime, primary_key=True),
        Column("state", String(16), primary_key=True),
        Column("queue", String(LIMITS["queue"]), primary_key=True),
        Column("task", String(LIMITS["task"]), primary_key=True),
        Column("jobs", BigInteger, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    task_sets = Table(
        f"{prefix}task_sets",
        metadata,
        Column("set_key", String(TASK_SET_KEY_LENGTH), primary_key=True),
        Column("task", String(LIMITS["task"]), primary_key=True),
        **MYSQL_TABLE_OPTIONS,
    )
    steps = Table(
        f"{prefix}steps",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("job_id", BigId, nullable=False),
        Column("name", String(STEP_NAME_LENGTH), nullable=False),
        Column("result", LongText, nullable=True),
        Column("finished_at", UtcDateTime, nullable=False),
        Index(f"uq_{prefix}steps_name", "job_id", "name", unique=True),
        **MYSQL_TABLE_OPTIONS,
    )
    signals = Table(
        f"{prefix}signals",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("job_id", BigId, nullable=False),
        Column("name", String(LIMITS["signal"]), nullable=False),
        Column("payload", LongText, nullable=True),
        Column("sent_at", UtcDateTime, nullable=False),
        Column("taken_by", String(STEP_NAME_LENGTH), nullable=True),
        Index(f"ix_{prefix}signals_mailbox", "job_id", "name", "id"),
        **MYSQL_TABLE_OPTIONS,
    )
    batches = Table(
        f"{prefix}batches",
        metadata,
        Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        Column("created_at", UtcDateTime, nullable=False),
        Column("size", Integer, nullable=False),
        Column("on_success", BigId, nullable=True),
        Column("on_complete", BigId, nullable=True),
        **MYSQL_TABLE_OPTIONS,
    )
    wait_deadlines = Table(
        f"{prefix}wait_deadlines",
        metadata,
        Column("namespace", String(LIMITS["namespace"]), primary_key=True),
        Column("until", UtcDateTime, primary_key=True),
        Column("job_id", BigId, primary_key=True, autoincrement=False),
        **MYSQL_TABLE_OPTIONS,
    )
    return Schema(
        metadata=metadata,
        jobs=jobs,
        workers=workers,
        schedules=schedules,
        leases=leases,
        queues=queues,
        dependencies=dependencies,
        limits=limits,
        schedule_history=schedule_history,
        tallies=tallies,
        tally_mark=tally_mark,
        task_sets=task_sets,
        hour_tallies=hour_tallies,
        steps=steps,
        signals=signals,
        batches=batches,
        wait_deadlines=wait_deadlines,
        job_tags=Table(
            f"{prefix}job_tags", metadata, *job_tag_columns(prefix), **MYSQL_TABLE_OPTIONS
        ),
        bulk_actions=Table(
            f"{prefix}bulk_actions", metadata, *bulk_action_columns(), **MYSQL_TABLE_OPTIONS
        ),
    )
