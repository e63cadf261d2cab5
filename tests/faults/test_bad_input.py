"""Bad input gets a clear typed error at the boundary and loses nothing (DESIGN invariant 6).

What this module proves, on every backend wherever a database is involved:

* Any text as a cron expression or a time zone is either accepted or refused with
  ``InvalidCron`` / ``InvalidTimezone`` (through ``Cron``, ``@rota.task(cron=...)`` and
  ``rota.schedule``), never another exception, and a refused schedule writes no row.
* Arguments over ``max_payload_bytes`` (1 MiB by default, counted in UTF-8 bytes), not
  JSON-serialisable, nested too deeply or not valid Unicode raise ``InvalidArguments`` naming
  the problem, and no job of the batch is written; a raised limit lets a 3 MiB payload through
  and it comes back identical.
* A job of a task no live worker knows waits in ``pending``, flagged by a warning when queued,
  by ``rota check`` and by the dashboard; CLI and dashboard actions on unknown names answer with
  a typed error.
* SQL-looking and unusual strings as task, queue and schedule names, unique keys and arguments
  are only data, through the API, the CLI and the dashboard: found by exact match only, returned
  identical, and the tables are still there.
* Malformed dashboard requests get a 4xx page without a traceback, and the app keeps serving.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape
from sqlalchemy import inspect

from rota import Enqueue, JobContext, Rota, TaskDefinition
from rota.cli import main
from rota.config import RotaConfig
from rota.core import payload
from rota.core.cron import Cron
from rota.core.model import JobState
from rota.core.schedules import ScheduleState
from rota.dashboard import create_app
from rota.errors import (
    ConfigError,
    InvalidArguments,
    InvalidCron,
    InvalidTimezone,
    RotaError,
    ScheduleNotFound,
    TaskNotRegistered,
)
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import sql_store

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

MINUTE = timedelta(minutes=1)
JOB_LINK = re.compile(r'href="/jobs/(\d+)"')
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


def attempt(
    refusal: type[RotaError], call: Callable[..., object], *args: Any
) -> tuple[object, RotaError | None]:
    """``call``'s result, or the ``refusal`` it raised; any other exception fails the test."""
    try:
        return call(*args), None
    except refusal as error:
        return None, error


def run_cli(db: Database, *args: str) -> Result:
    result = CliRunner().invoke(main, [*args, "--url", db.url, "--table-prefix", db.prefix])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"rota {' '.join(args)} crashed: {result.exception!r}"
    )
    assert "Traceback" not in result.output
    return result


def cli_json(db: Database, *args: str) -> Any:
    result = run_cli(db, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def tables_intact(db: Database) -> None:
    engine = db.engine()
    try:
        names = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {db.table("jobs"), db.table("schedules"), db.table("workers")} <= names


def client_for(rota: Rota) -> TestClient:
    return TestClient(create_app(rota), base_url="http://localhost", raise_server_exceptions=False)


def linked_jobs(html: str) -> set[int]:
    return {int(found) for found in JOB_LINK.findall(html)}


# -- cron expressions and time zones ---------------------------------------------------------

TOKENS = ["*", "*/5", "*/0", "0", "59", "60", "-1", "1-5", "5-1", "1,2,3", ",", "-", "/"]
TOKENS += ["MON", "mon-fri", "JAN", "L", "5L", "1W", "LW", "1#2", "1#6", "?", "H", "0x1F"]
TOKENS += ["", "\x00", "\uff12", "\u00b2", "\u0663", "*/99999999999999999999", "1-59/0", "@daily"]
field_text = st.one_of(
    st.sampled_from(TOKENS),
    st.integers(-3, 100).map(str),
    st.text(alphabet="0123456789*/,-LW#?MONTUEJAN", max_size=6),
)
near_valid_cron = st.lists(field_text, min_size=3, max_size=7).map(" ".join)
long_cron = st.integers(100, 140).map(lambda n: ",".join(["0"] * n) + " * * * *")
cron_text = st.one_of(
    st.text(),
    near_valid_cron,
    long_cron,
    st.sampled_from(["@hourly", "@HOURLY", " @daily ", "@reboot", "@", "@every 5m"]),
    st.sampled_from(["* * * * *", "*/5 * * * *", "0 3 * * *", "0 0 29 2 *", "* * L * *"]),
)
ZONE_SAMPLES = ["UTC", "Europe/Berlin", "Asia/Shanghai", "America/Argentina/ComodRivadavia"]
ZONE_SAMPLES += ["../etc", "../../etc/passwd", "/etc/localtime", "Europe/../Europe/Berlin"]
ZONE_SAMPLES += ["Europe/Berlin\x00", "\x00", "Europe\\Berlin", "America", "Europe/", ".", ""]
ZONE_SAMPLES += ["a" * 10_000, "Europe/" * 2_000, "zoneinfo", "tzdata", "UTC+1", "\ud800"]
zone_text = st.one_of(
    st.text(),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters()),
    st.sampled_from(ZONE_SAMPLES),
    st.lists(st.sampled_from(["..", ".", "", "Europe", "Berlin", "etc", "\x00"]), max_size=5).map(
        "/".join
    ),
)


@settings(max_examples=200, deadline=None)
@given(expression=cron_text)
def test_any_cron_text_is_accepted_or_refused_with_invalid_cron(expression: str) -> None:
    cron, error = attempt(InvalidCron, Cron, expression)
    if error is not None:
        assert error.code == "INVALID_CRON"
        return
    assert isinstance(cron, Cron)
    assert len(expression) <= 255, "an accepted expression fits the schedules' column"
    tick = cron.next_after(START)
    assert tick > START
    assert (tick.second, tick.microsecond) == (0, 0)
    assert isinstance(cron.describe(), str)


@settings(max_examples=200, deadline=None)
@given(name=zone_text)
def test_any_time_zone_text_is_accepted_or_refused_with_invalid_timezone(name: str) -> None:
    cron, error = attempt(InvalidTimezone, Cron, "0 9 * * *", name)
    if error is not None:
        assert error.code == "INVALID_TIMEZONE"
        assert len(str(error)) < 1000, "the message quotes a long name cut short"
        return
    assert isinstance(cron, Cron)
    assert len(name) <= 64, "an accepted zone fits the schedules' column"
    assert cron.next_after(START).utcoffset() == timedelta(0)
    assert ZoneInfo(name).key == name


def test_task_definitions_with_bad_cron_or_zone_are_refused_and_not_registered(
    tmp_path: Any,
) -> None:
    rota = Rota(f"sqlite:///{tmp_path}/rota.db")
    names = (f"task{n}" for n in itertools.count())

    @settings(max_examples=100, deadline=None)
    @given(expression=cron_text, tz=st.one_of(st.just("UTC"), zone_text))
    def define(expression: str, tz: str) -> None:
        name = next(names)
        try:

            @rota.task(name=name, cron=expression, tz=tz)
            def handler(ctx: JobContext) -> None: ...

        except (InvalidCron, InvalidTimezone):
            assert name not in rota.registry.names()
        else:
            assert rota.registry.get(name).cron == expression

    define()
    sql_store(rota).engine.dispose()


def test_schedules_with_any_cron_or_zone_are_stored_exactly_or_refused_unwritten(
    rota: Rota, clock: FakeClock
) -> None:
    @rota.task
    def tick(ctx: JobContext) -> None: ...

    names = (f"fuzz-{n}" for n in itertools.count())
    accepted: list[str] = []
    assert rota.jobs() == []  # the schema exists before the first refusal is checked

    @settings(max_examples=25, deadline=None)
    @given(expression=cron_text, tz=st.one_of(st.sampled_from(["UTC", "Asia/Shanghai"]), zone_text))
    def schedule(expression: str, tz: str) -> None:
        name = next(names)
        try:
            assert rota.schedule(expression, tick, tz=tz, name=name) == name
        except (InvalidCron, InvalidTimezone):
            assert rota.store.schedules.get(name) is None
            return
        stored = rota.store.schedules.get(name)
        assert stored is not None
        assert (stored.spec.cron, stored.spec.tz) == (expression, tz)
        accepted.append(name)

    schedule()
    assert rota.schedule("* * * * *", tick, name="every-minute") == "every-minute"
    clock.advance(MINUTE)
    result = rota.drain()
    assert result.failed == 0, "the worker still runs the schedules"
    assert result.succeeded == len(rota.store.reads.jobs(task="tick", limit=1000)) >= 1
    assert {s.name for s in rota.store.schedules.all()} == {*accepted, "every-minute"}


# -- arguments ---------------------------------------------------------------------------------


def nested(depth: int) -> list[Any]:
    """A list ``depth`` levels deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def size_of(args: list[Any], kwargs: dict[str, Any] | None = None) -> int:
    return len(payload.encode(args, kwargs or {}, max_bytes=2**40).encode())


def test_arguments_over_the_limit_are_refused_with_their_size_and_nothing_is_written(
    make_rota: Callable[..., Rota],
) -> None:
    rota = make_rota(max_payload_bytes=1001)
    received: list[Any] = []

    @rota.task
    def take(ctx: JobContext, *args: Any, **kwargs: Any) -> None:
        received.append((args, kwargs))

    big = "x" * 2000
    message = rf"arguments are {size_of([big])} bytes as JSON, over the 1001 limit"
    refusals: list[Callable[[], object]] = [
        lambda: rota.queue(take, big),
        lambda: rota.queue(take, kwargs={"text": big}),
        lambda: rota.queue_many([Enqueue(take, "fits"), Enqueue(take, big)]),
        lambda: rota.schedule("* * * * *", take, name="big", args=[big]),
    ]
    for refuse in refusals:
        with pytest.raises(InvalidArguments, match=r"bytes as JSON, over the 1001 limit") as info:
            refuse()
        assert info.value.code == "INVALID_ARGUMENTS"
    with pytest.raises(InvalidArguments, match=message):
        rota.queue(take, big)
    # The limit counts UTF-8 bytes, not characters, and a payload of exactly the limit fits.
    assert size_of(["é" * 485]) == 1001
    with pytest.raises(InvalidArguments, match="1003 bytes as JSON, over the 1001 limit"):
        rota.queue(take, "é" * 486)
    assert rota.jobs() == [], "no job nor schedule was written"
    assert rota.store.reads.jobs() == []

    fits = rota.queue(take, "é" * 485)
    assert rota.drain().succeeded == 1, "the worker keeps working"
    assert received == [(("é" * 485,), {})]
    assert [job.id for job in rota.store.reads.jobs()] == [fits]


def test_the_default_limit_is_one_mebibyte(rota: Rota) -> None:
    limit = 1024 * 1024
    assert limit == payload.DEFAULT_MAX_PAYLOAD_BYTES
    assert RotaConfig.max_payload_bytes == limit, "the one place the default is written"
    assert rota.config.max_payload_bytes == limit

    @rota.task
    def take(ctx: JobContext, text: str) -> None: ...

    overhead = size_of([""])
    with pytest.raises(InvalidArguments, match=f"{limit + 1} bytes as JSON, over the {limit}"):
        rota.queue(take, "x" * (limit + 1 - overhead))
    assert rota.jobs() == []
    at_limit = rota.queue(take, "x" * (limit - overhead))
    assert len(rota.job(at_limit).args[0]) == limit - overhead


def test_a_raised_limit_lets_a_big_payload_through_intact(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(max_payload_bytes=4 * 1024 * 1024)
    received: list[Any] = []

    @rota.task
    def take(ctx: JobContext, blob: str, **extra: Any) -> None:
        received.append((blob, extra))

    blob = "ü€😀 'quote' \"double\" \\ \x00 " + "abcdefghij" * 330_000
    extra: dict[str, Any] = {"rows": [{"id": n, "name": f"row {n}"} for n in range(1000)]}
    extra["deep"] = nested(50)
    assert 3 * 1024 * 1024 < size_of([blob], extra) < 4 * 1024 * 1024
    job_id = rota.queue(take, blob, **extra)
    stored = rota.job(job_id)
    assert stored.args == (blob,) and stored.kwargs == extra
    assert rota.drain().succeeded == 1
    assert received == [(blob, extra)]


def circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


BAD_ARGUMENTS: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("object", (object(),), {}, "positional argument 0 is not JSON-serialisable"),
    ("set", (1, {1, 2}), {}, "positional argument 1 is not JSON-serialisable"),
    ("bytes", (), {"data": b"\x00\xff"}, "keyword argument 'data' is not JSON-serialisable"),
    ("datetime", (datetime(2026, 1, 1),), {}, "positional argument 0 is not JSON-serialisable"),
    ("nan", (float("nan"),), {}, "positional argument 0 is not JSON-serialisable"),
    ("infinity", (), {"x": float("-inf")}, "keyword argument 'x' is not JSON-serialisable"),
    ("circular", (circular(),), {}, "positional argument 0 is not JSON-serialisable"),
    ("huge int", (10**5000,), {}, "positional argument 0 is not JSON-serialisable"),
    ("100k deep", ("ok", nested(100_000)), {}, "positional argument 1 is nested more than 100"),
    ("101 deep", (nested(101),), {}, "positional argument 0 is nested more than 100 levels"),
    ("deep in kwargs", (), {"tree": {"a": nested(150)}}, "keyword argument 'tree' is nested"),
    ("lone surrogate", ("ok \ud800",), {}, "positional argument 0 is not valid Unicode"),
    ("surrogate key", (), {"x": {"\udcff": 1}}, "keyword argument 'x' is not valid Unicode"),
    ("surrogate name", (), {"\ud83d": 1}, "keyword argument name '\\ud83d' is not valid"),
]


def test_bad_arguments_are_named_and_leave_nothing_written(rota: Rota) -> None:
    received: list[Any] = []

    @rota.task
    def take(ctx: JobContext, *args: Any, **kwargs: Any) -> None:
        received.append((args, kwargs))

    def refused(message: str, call: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        with pytest.raises(InvalidArguments, match=re.escape(message)) as info:
            call(*args, **kwargs)
        assert info.value.code == "INVALID_ARGUMENTS"

    for label, args, kwargs, message in BAD_ARGUMENTS:
        refused(message, rota.queue, take, args=args, kwargs=kwargs)
        refused(message, rota.queue_many, [Enqueue(take, "fine"), Enqueue(take, *args, **kwargs)])
        refused(message, rota.schedule, "* * * * *", take, name=label, args=args, kwargs=kwargs)
    assert rota.jobs() == [] and rota.store.reads.jobs() == []

    deepest = nested(100)
    job_id = rota.queue(take, deepest)
    assert rota.job(job_id).args == (deepest,)
    assert rota.drain().succeeded == 1, "the worker keeps working"
    assert received == [((deepest,), {})]


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(), st.binary().map(lambda raw: raw.decode("latin-1"))))
def test_any_stored_payload_text_decodes_or_raises_invalid_arguments(text: str) -> None:
    decoded, error = attempt(InvalidArguments, payload.decode, text)
    if error is not None:
        assert error.code == "INVALID_ARGUMENTS"
    else:
        assert isinstance(decoded, payload.Arguments)
        assert isinstance(decoded.args, tuple) and isinstance(decoded.kwargs, dict)


def test_stored_payloads_that_are_not_rotas_raise_invalid_arguments() -> None:
    for text in (
        "",
        "[",
        "[]",
        "null",
        '{"v":2,"args":[],"kwargs":{}}',
        '{"v":1,"args":{}}',
        "[" * 100_000,
    ):
        with pytest.raises(InvalidArguments):
            payload.decode(text)


def test_an_unreadable_payload_fails_its_job_and_blocks_no_other(db: Database, rota: Rota) -> None:
    """A row written by a newer rota (payload version 2) or edited by hand must not stop the
    worker from claiming, nor the CLI and dashboard from listing, every other job."""
    ran: list[int] = []

    @rota.task(retries=3)
    def work(ctx: JobContext, n: int) -> None:
        ran.append(n)

    first, unreadable, last = (rota.queue(work, n) for n in (1, 2, 3))
    jobs = sql_store(rota).schema.jobs
    with sql_store(rota).engine.begin() as connection:
        connection.execute(
            jobs.update()
            .where(jobs.c.id == unreadable)
            .values(payload='{"v":2,"args":[2],"kwargs":{}}')
        )

    listed = {job.id: job for job in rota.store.reads.jobs()}
    assert set(listed) == {first, unreadable, last}
    error = listed[unreadable].payload_error
    assert error is not None and "unsupported job payload" in error
    result = rota.drain()

    assert sorted(ran) == [1, 3]
    assert (result.succeeded, result.failed, result.retried) == (2, 1, 0)
    failed = rota.job(unreadable)
    assert failed.state is JobState.FAILED and failed.attempt == 1, "not retried: it cannot read"
    assert [(e.code, e.type) for e in failed.errors] == [
        ("INVALID_ARGUMENTS", "rota.errors.InvalidArguments")
    ]
    shown = run_cli(db, "job", str(unreadable))
    assert shown.exit_code == 0 and "unreadable: unsupported job payload" in shown.output
    page = client_for(rota).get(f"/jobs/{unreadable}")
    assert page.status_code == 200 and "Unreadable arguments" in page.text


# -- unknown task names ----------------------------------------------------------------------


def test_a_job_of_a_task_no_worker_knows_waits_flagged_everywhere(
    db: Database, make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    producer = make_rota()

    @producer.task
    def known(ctx: JobContext) -> None: ...

    with caplog.at_level(logging.WARNING, logger="rota"):
        job_id = producer.queue("no_such_task", 42)
    (warning,) = [r for r in caplog.records if getattr(r, "event", None) == "job.unknown_task"]
    assert warning.levelno == logging.WARNING and warning.task == "no_such_task"  # type: ignore[attr-defined]
    assert "not registered here nor by any live worker" in warning.getMessage()

    def unregistered(ctx: JobContext) -> None: ...

    with pytest.raises(TaskNotRegistered) as info:
        producer.queue(unregistered)
    assert info.value.code == "TASK_NOT_REGISTERED"

    orphan = producer.schedule("* * * * *", "no_such_task", name="orphan", overlap="allow")
    assert orphan == "orphan"
    clock.advance(MINUTE)
    assert producer.drain().total == 0, "no worker here runs a task it does not know"
    waiting = producer.store.reads.jobs(task="no_such_task")
    assert {job.state for job in waiting} == {JobState.PENDING}
    assert job_id in {job.id for job in waiting} and len(waiting) == 3, "the job and 2 ticks"
    job = producer.job(job_id)
    assert (job.queue, job.args, job.max_attempts) == ("default", (42,), None)

    check = run_cli(db, "check", "--json")
    assert check.exit_code == 1, "a problem found"
    assert json.loads(check.stdout)["stranded_jobs"] == [
        {
            "task": "no_such_task",
            "queue": "default",
            "pending": 3,
            "reason": "no live worker registers the task",
        }
    ]

    client = client_for(producer)
    overview = client.get("/")
    assert overview.status_code == 200
    assert "Waiting for a worker" in overview.text and "no_such_task" in overview.text
    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert "Waiting for a worker: no live worker registers task" in page.text
    token = CSRF.search(client.get("/schedules").text)
    assert token is not None
    missing = client.post("/schedules/no_such_schedule/run-now", data={"csrf_token": token[1]})
    assert missing.status_code == 404 and "does not exist" in missing.text

    run = run_cli(db, "run-now", "orphan")
    assert run.exit_code == 0, run.output
    assert "warning: no live worker registers task 'no_such_task'" in run.stderr
    gone = run_cli(db, "run-now", "no_such_schedule")
    assert gone.exit_code == 1 and "SCHEDULE_NOT_FOUND" in gone.stderr
    cancelled = run_cli(db, "cancel", str(job_id))
    assert cancelled.exit_code == 0 and f"job {job_id} (no_such_task) cancelled" in cancelled.stdout
    assert producer.job(job_id).state is JobState.CANCELLED


# -- SQL-looking and unusual strings ---------------------------------------------------------


def hostile_strings(db: Database) -> list[str]:
    """Names and values that would break or widen a query built by string concatenation."""
    return [
        f"x'; DROP TABLE {db.prefix}jobs; --",
        f'x"; DROP TABLE {db.prefix}schedules; --',
        '" OR 1=1 --',
        "' OR '1'='1",
        "back\\slash \\' \\\" \\\\",
        "%",
        "100%",
        "_",
        "a_c",
        "ünïcødé 😀 名前 עברית",
        "line\u2028separator and non\u00a0breaking space",
        "`tick`; SELECT 1; /*",
        "$1 ? :name %(x)s {0}",
    ]


DECOY = "abc"  # what a LIKE pattern "a_c" or "%" would also match


def populate(rota: Rota, clock: FakeClock, strings: list[str]) -> dict[str, int]:
    """A task, queue, unique job and schedule named by each string; all run once.

    Returns the id of the directly queued job of each string.
    """
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def record(ctx: JobContext, *args: Any, **kwargs: Any) -> None:
        seen.append((ctx.task, args, kwargs))

    direct: dict[str, int] = {}
    clock.advance(timedelta(seconds=30))  # so that each schedule's first tick is the next one
    for text in [*strings, DECOY]:
        rota.define_task(TaskDefinition(name=text, handler=record, queue=text))
        direct[text] = rota.queue(text, text, unique_key=text, kwargs={"value": text, text: text})
        assert rota.queue(text, "again", unique_key=text) == direct[text], "same key, same job"
        assert rota.job(direct[text]).unique_key == text
        assert rota.schedule("* * * * *", text, name=text, args=[text]) == text
    clock.advance(MINUTE)
    result = rota.drain()
    assert (result.succeeded, result.failed) == (2 * len(direct), 0)
    for text in direct:
        assert (text, (text,), {"value": text, text: text}) in seen
        assert (text, (text,), {}) in seen
    return direct


def test_hostile_strings_through_the_api_are_only_data(
    db: Database, rota: Rota, clock: FakeClock
) -> None:
    strings = hostile_strings(db)
    direct = populate(rota, clock, strings)
    everything = rota.store.reads.jobs(limit=1000)
    assert len(everything) == 2 * len(direct)
    for text, job_id in direct.items():
        expected = {job.id for job in everything if job.task == text}
        assert len(expected) == 2 and job_id in expected
        assert {job.id for job in rota.store.reads.jobs(task=text)} == expected, text
        assert {job.id for job in rota.store.reads.jobs(queue=text)} == expected, text
        job = rota.job(job_id)
        assert (job.task, job.queue) == (text, text)
        assert job.args == (text,) and job.kwargs == {"value": text, text: text}
        schedule = rota.store.schedules.get(text)
        assert schedule is not None and schedule.name == text
        assert (schedule.spec.task, schedule.spec.queue) == (text, text)
    assert rota.store.reads.jobs(task="a%") == [] and rota.store.reads.jobs(task="ABC") == []
    assert rota.pause("%") and rota.cancel("_")
    states = {s.name: s.state for s in rota.store.schedules.all()}
    assert states.pop("%") is ScheduleState.PAUSED and states.pop("_") is ScheduleState.CANCELLED
    assert set(states.values()) == {ScheduleState.ACTIVE}, "no other schedule was touched"
    tables_intact(db)


REFUSED_NAMES = [
    "nul\x00byte",
    "tab\there",
    "new\nline",
    "trailing ",
    " leading",
    "bad\ud800surrogate",
    "",
    "x" * 256,
    "c1\x85control",
    "soft\u00adhyphen",
    "zero\u200bwidth",
    "bidi\u202eoverride",
    "\ufeffbom",
]


@pytest.mark.parametrize("name", REFUSED_NAMES, ids=repr)
def test_names_every_backend_cannot_keep_exactly_are_refused(
    db: Database, rota: Rota, name: str
) -> None:
    """MySQL's PAD SPACE collations take "k" and "k " for one key, PostgreSQL refuses NUL, no
    driver sends a lone surrogate: such names are refused up front, on every backend alike."""

    @rota.task
    def invoice(ctx: JobContext, value: str) -> None: ...

    rota._readiness.ensure_ready()
    with pytest.raises(ConfigError):
        rota.define_task(TaskDefinition(name=name, handler=lambda: None))
    with pytest.raises(ConfigError):
        rota.define_task(TaskDefinition(name="ok", handler=lambda: None, queue=name))
    refused: list[Callable[[], object]] = [
        lambda: rota.queue(name, "x"),
        lambda: rota.queue(invoice, "x", queue=name),
        lambda: rota.queue(invoice, "x", unique_key=name),
        lambda: rota.queue_many([Enqueue(invoice, "x"), Enqueue(invoice, "y", unique_key=name)]),
    ]
    for attempt in refused:
        with pytest.raises(InvalidArguments):
            attempt()
    with pytest.raises(ConfigError):
        rota.schedule("* * * * *", invoice, name=name, args=["x"])
    with pytest.raises(ConfigError):
        rota.schedule("* * * * *", invoice, name="fine", queue=name, args=["x"])
    for lookup in (rota.pause, rota.resume, rota.run_now):
        with pytest.raises(ScheduleNotFound):
            lookup(name)
    assert rota.cancel(name) is False, "no such schedule"
    assert rota.store.reads.jobs() == [] and rota.store.schedules.all() == []
    if "\ud800" not in name:  # a lone surrogate is refused as an argument too
        assert rota.job(rota.queue(invoice, name)).args == (name,), "as an argument it is data"
    tables_intact(db)


def test_hostile_strings_through_the_cli_are_only_data(
    db: Database, rota: Rota, clock: FakeClock
) -> None:
    strings = hostile_strings(db)
    direct = populate(rota, clock, strings)
    everything = rota.store.reads.jobs(limit=1000)
    for text, job_id in direct.items():
        expected = {job.id for job in everything if job.task == text}
        assert {job["id"] for job in cli_json(db, "jobs", "--task", text)} == expected, text
        assert {job["id"] for job in cli_json(db, "jobs", "--queue", text)} == expected, text
        shown = cli_json(db, "job", str(job_id))
        assert (shown["task"], shown["queue"]) == (text, text)
        assert shown["args"] == [text] and shown["kwargs"] == {"value": text, text: text}
    assert {s["name"] for s in cli_json(db, "schedules")} == set(direct)
    assert cli_json(db, "jobs", "--task", "a%") == []

    for text in strings[:2]:
        for command, state in (("pause", "paused"), ("resume", "active")):
            acted = run_cli(db, command, text)
            assert acted.exit_code == 0, acted.output
            schedule = rota.store.schedules.get(text)
            assert schedule is not None and schedule.state.value == state
        before = len(rota.store.reads.jobs(task=text))
        assert run_cli(db, "run-now", text).exit_code == 0
        assert len(rota.store.reads.jobs(task=text)) == before + 1
        assert run_cli(db, "cancel", text).exit_code == 0
        schedule = rota.store.schedules.get(text)
        assert schedule is not None and schedule.state is ScheduleState.CANCELLED
    active = {s.name for s in rota.store.schedules.all() if s.state is ScheduleState.ACTIVE}
    assert active == set(direct) - set(strings[:2])
    bad = run_cli(db, "jobs", "--task", "not utf-8 \udcff")
    assert bad.exit_code == 1 and "INVALID_ARGUMENTS: task" in bad.stderr
    assert "is not valid Unicode" in bad.stderr, "refused as a name, before any query"
    tables_intact(db)


def test_hostile_strings_through_the_dashboard_are_only_data(
    db: Database, rota: Rota, clock: FakeClock
) -> None:
    strings = hostile_strings(db)
    direct = populate(rota, clock, strings)
    everything = rota.store.reads.jobs(limit=1000)
    client = client_for(rota)
    for text, job_id in direct.items():
        expected = {job.id for job in everything if job.task == text}
        for key in ("task", "queue"):
            page = client.get("/jobs", params={key: text})
            assert page.status_code == 200, (key, text)
            assert linked_jobs(page.text) == expected, (key, text)
        detail = client.get(f"/jobs/{job_id}")
        assert detail.status_code == 200 and str(escape(text)) in detail.text
    assert linked_jobs(client.get("/jobs", params={"task": "a%"}).text) == set()
    schedules = client.get("/schedules")
    for text in direct:
        assert str(escape(text)) in schedules.text
    token = CSRF.search(schedules.text)
    assert token is not None
    target = strings[0]
    paused = client.post(
        f"/schedules/{quote(target, safe='')}/pause",
        data={"csrf_token": token[1]},
        follow_redirects=False,
    )
    assert paused.status_code == 303
    states = {s.name: s.state for s in rota.store.schedules.all()}
    assert states.pop(target) is ScheduleState.PAUSED
    assert set(states.values()) == {ScheduleState.ACTIVE}
    nul = client.get("/jobs", params={"task": "nul\x00"})
    assert nul.status_code == 400, "no task's name holds a control character: refused"
    assert linked_jobs(nul.text) == set()
    tables_intact(db)


# -- malformed dashboard requests ------------------------------------------------------------


def raw_get(app: Any, path: str) -> tuple[int, str]:
    """GET ``path`` as sent, bypassing the HTTP client's normalisation of ``..`` segments."""

    async def call() -> tuple[int, str]:
        messages: list[dict[str, Any]] = []
        finished = asyncio.Event()
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8", "surrogateescape"),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"localhost")],
            "client": ("127.0.0.1", 50000),
            "server": ("localhost", 80),
        }
        await app(scope, receive, send)
        finished.set()
        (status,) = [m["status"] for m in messages if m["type"] == "http.response.start"]
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
        return status, body.decode("utf-8", "replace")

    return asyncio.run(call())


def assert_clean(status: int, body: str, allowed: tuple[int, ...], what: str) -> None:
    assert status in allowed, f"{what}: {status}"
    assert "Traceback" not in body and 'File "' not in body, what
    assert "def create_app" not in body and "root:x:0:0" not in body, what


def test_malformed_dashboard_requests_get_4xx_pages_and_the_app_keeps_serving(
    db: Database, rota: Rota
) -> None:
    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise RuntimeError("no")

    failed = rota.queue(boom)
    rota.drain()
    app = create_app(rota)
    client = TestClient(app, raise_server_exceptions=False, base_url="http://localhost")

    not_found = ["-1", "0", "abc", "1e5", "1.5", "%00", "%20", "\u00b2", "\uff11", "9" * 5000]
    not_found += ["9223372036854775808", "99999999999999999999999", f"{failed}x"]
    for job_id in not_found:
        response = client.get(f"/jobs/{job_id}")
        assert_clean(response.status_code, response.text, (404,), f"/jobs/{job_id[:20]}")
        assert "Not found" in response.text

    bad_queries = [
        "page=-1",
        "page=0",
        "page=abc",
        "page=\u00b2",
        "page=\uff11",
        "page=1e3",
        "page=201",
    ]
    bad_queries += ["page=" + "9" * 5000, "id=-1", "id=0", "id=\u00b2", "id=" + "9" * 5000]
    bad_queries += ["state=bogus", "state=PENDING", "state=%00", "state=" + "x" * 5000]
    bad_queries += ["task=" + "t" * 256, "queue=" + "q" * 256, "task=" + "%25" * 20_000]
    for query in bad_queries:
        response = client.get(f"/jobs?{query}")
        assert_clean(response.status_code, response.text, (400,), query[:30])
        assert "Bad request" in response.text and len(response.text) < 10_000

    ignored = ["/jobs?unknown=1", "/jobs?junk=" + "x" * 60_000, "/?page=x", "/metrics?x=%00"]
    ignored += ["/jobs?state=failed&state=&page=1&page=2", "/workers?id=-1", "/schedules?%ff=%fe"]
    for path in ignored:
        response = client.get(path)
        assert_clean(response.status_code, response.text, (200,), path[:30])

    methods = [("DELETE", "/jobs"), ("PUT", f"/jobs/{failed}/retry"), ("PATCH", "/")]
    methods += [("GET", f"/jobs/{failed}/retry"), ("GET", "/schedules/x/pause"), ("TRACE", "/")]
    methods += [("POST", "/jobs"), ("POST", "/metrics"), ("OPTIONS", "/workers")]
    for method, path in methods:
        response = client.request(method, path)
        assert_clean(response.status_code, response.text, (405,), f"{method} {path}")

    token = CSRF.search(client.get(f"/jobs/{failed}").text)
    assert token is not None
    retry = f"/jobs/{failed}/retry"
    form = "application/x-www-form-urlencoded"
    posts: list[tuple[dict[str, str], bytes, tuple[int, ...]]] = [
        ({}, b"", (403,)),
        ({"content-type": form}, b"next=/jobs", (403,)),
        (
            {"content-type": "application/json"},
            json.dumps({"csrf_token": token[1]}).encode(),
            (403,),
        ),
        ({"content-type": "text/plain"}, f"csrf_token={token[1]}".encode(), (403,)),
        ({"content-type": "multipart/form-data; boundary=x"}, b"--x\r\ngarbage", (403,)),
        ({"content-type": form}, b"\xff\xfe\x00garbage%%%==&&", (403,)),
        ({"content-type": form}, f"csrf_token={token[1]}&".encode() + b"a=1&" * 100, (413,)),
        ({"content-type": form}, b"csrf_token=" + b"0" * 20_000, (413,)),
        ({"content-type": form, "content-length": "abc"}, b"x", (400,)),
    ]
    for headers, body, allowed in posts:
        response = client.post(retry, content=body, headers=headers, follow_redirects=False)
        assert_clean(response.status_code, response.text, allowed, f"{headers} {body[:20]!r}")
    assert rota.job(failed).state is JobState.FAILED, "no refused request retried the job"
    for path in ("/jobs/abc/retry", "/jobs/99999999999999999999999/cancel"):
        response = client.post(path, data={"csrf_token": token[1]})
        assert_clean(response.status_code, response.text, (404,), path)

    static = ["/static/%2e%2e/app.py", "/static/..%2fapp.py", "/static/%2e%2e%2fapp.py"]
    static += ["/static/..%5capp.py", "/static/%252e%252e/app.py", "/static/%00", "/static/"]
    static += ["/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd"]
    for path in static:
        response = client.get(path)
        assert_clean(response.status_code, response.text, (404,), path)
    raw = ["/static/../app.py", "/static/../../../../../../../etc/passwd", "/static/..\\app.py"]
    raw += ["/static/dashboard.css/../../app.py", "/static/../templates/base.html", "/static/\x00"]
    for path in raw:
        status, page = raw_get(app, path)
        assert_clean(status, page, (400, 404), repr(path))
        assert "{% block" not in page
    assert raw_get(app, "/static/./dashboard.css")[0] == 200

    assert client.get("/").status_code == 200, "still serving"
    assert linked_jobs(client.get("/jobs").text) == {failed}
    assert client.get(f"/jobs/{failed}").status_code == 200


# -- database URLs ---------------------------------------------------------------------------

BAD_URLS = [
    "mysql+nosuchdriver://app:Pw-7f3a@db/app",
    "mysql://app:Pw-7f3a@db:notaport/app",
    "no url at all Pw-7f3a",
    "oracle://app:Pw-7f3a@db/app",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_bad_database_url_is_a_config_error_that_does_not_quote_it(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Rota(url)
    assert "Pw-7f3a" not in str(raised.value)


@pytest.mark.parametrize("command", ["migrate", "prune", "check", "jobs"])
@pytest.mark.parametrize("url", BAD_URLS)
def test_every_command_refuses_a_bad_url_without_a_traceback(command: str, url: str) -> None:
    result = CliRunner().invoke(main, [command, "--url", url])
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0, result.output
    assert "CONFIG_ERROR" in result.output or "not a database URL" in result.output
    assert "Traceback" not in result.output and "Pw-7f3a" not in result.output
