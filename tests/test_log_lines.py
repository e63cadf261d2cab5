"""What a log line of the execution log costs was cut (issue 33) without changing the line:
the text format's time is logging's own, the record of an event carries its exception, and its
fields stay attributes for structured handlers."""

from __future__ import annotations

import io
import logging

import pytest

from rota.core.events import EventName
from rota.observe.events import EventLog
from rota.observe.logs import TEXT, TextLines
from rota.store.events import log_event

pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize(
    "created",
    [0.0, 1.0005, 1_765_000_000.999, 1_765_000_001.0, 1_765_000_001.25, 1_765_000_000.5],
)
def test_the_text_format_writes_the_time_as_logging_itself_does(created: float) -> None:
    own, standard = TextLines(), logging.Formatter(TEXT)
    # One formatter across records: its second, kept between them, must never go stale.
    for moment in (created, created + 0.001, created + 1.5, created):
        record = logging.LogRecord("rota.events", logging.INFO, "x", 1, "m", None, None)
        record.created = moment
        record.msecs = int((moment - int(moment)) * 1000) + 0.0
        assert own.formatTime(record) == standard.formatTime(record)


class Keeper(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def fields(record: logging.LogRecord, *names: str) -> tuple[object, ...]:
    return tuple(vars(record)[name] for name in names)


def capture() -> tuple[logging.Logger, list[logging.LogRecord], io.StringIO]:
    logger = logging.getLogger("rota.tests.lines")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    records: list[logging.LogRecord] = []
    stream = io.StringIO()
    text = logging.StreamHandler(stream)
    text.setFormatter(TextLines())
    keep = Keeper(records)
    logger.addHandler(text)
    logger.addHandler(keep)
    return logger, records, stream


def test_an_events_record_carries_its_fields_and_its_exception() -> None:
    logger, records, stream = capture()
    try:
        raise ValueError("boom")
    except ValueError as error:
        caught = error
    log_event(
        logger,
        EventName.WORKER_LOOP_ERROR,
        logging.ERROR,
        "a loop failed: %s",
        "x",
        exc_info=caught,
        loop="claim",
    )
    (record,) = records
    assert fields(record, "event", "loop") == ("worker.loop_error", "claim")
    assert record.getMessage() == "a loop failed: x"
    assert record.exc_info is not None and record.exc_info[1] is caught
    assert "ValueError: boom" in stream.getvalue()


def test_no_record_is_made_below_the_loggers_level() -> None:
    logger, records, _ = capture()
    logger.setLevel(logging.WARNING)
    log_event(logger, EventName.JOB_STARTED, logging.INFO, "%s", "x")
    EventLog(logger).emit(EventName.JOB_STARTED, job_id=1)
    assert records == []


def test_a_job_line_shows_its_fields_as_logfmt() -> None:
    logger, records, stream = capture()
    EventLog(logger, log_format="text").emit(
        EventName.JOB_FAILED, job_id=7, task="t", attempt=2, error='bad "x" = y'
    )
    (record,) = records
    assert fields(record, "job_id", "task", "queue", "event") == (7, "t", None, "job.failed")
    line = stream.getvalue().rstrip("\n").split(": ", 1)[1]
    assert line == 'job.failed job_id=7 task=t attempt=2 error="bad \\x22x\\x22 = y"'
