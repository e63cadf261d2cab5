"""Cron expressions and their next ticks, with the DST rules written down.

Parsing and next-tick maths come from ``cronsim``, which follows Debian cron:

* five fields (minute hour day-of-month month day-of-week), or ``@hourly @daily @weekly
  @monthly @yearly @annually``; a sixth (seconds) field is refused: rota is minute-level;
* a tick that falls in a skipped hour (spring forward) runs once, at the first instant after
  the gap (02:30 on a day when 02:00-03:00 does not exist runs at 03:00);
* a tick at a fixed wall-clock time in a repeated hour (fall back) runs once, at its first
  occurrence; expressions with a wildcard hour keep firing by real elapsed time, so ``*/30``
  ticks in both copies of the repeated hour.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from rota.errors import InvalidCron, InvalidTimezone

ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
LARGEST_STEP = (59, 23, 31, 12, 7)
"""A step past a field's range matches its first value only: a typo, so it is refused."""
MAX_LENGTH = 255
"""Schedules store the expression as given, in a column this wide."""
MAX_ZONE_LENGTH = 64
"""The zone's column is as wide; the longest IANA name has 32 characters."""


@dataclass(frozen=True)
class Cron:
    """A validated expression in a time zone; ``next_after`` gives aware UTC ticks."""

    expression: str
    tz: str = "UTC"
    _fields: str = field(init=False, repr=False, compare=False)
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_zone", zone(self.tz))
        object.__setattr__(self, "_fields", _fields(self.expression))

    def next_after(self, moment: datetime) -> datetime:
        """The first tick strictly after ``moment``."""
        return next(self.ticks_after(moment))

    def first_run(self, moment: datetime) -> datetime:
        """The first tick at or after ``moment``: where a new, changed or resumed schedule
        starts, so one created at 00:00:00 with ``*/5 * * * *`` runs the 00:00 tick."""
        return self.next_after(moment - timedelta(microseconds=1))

    def ticks_after(self, moment: datetime) -> Iterator[datetime]:
        """Ticks strictly after ``moment``, in increasing order, as aware UTC datetimes."""
        local = moment.astimezone(self._zone)
        for tick in CronSim(self._fields, local):
            yield tick.astimezone(timezone.utc)

    def describe(self) -> str:
        return str(CronSim(self._fields, datetime.now(self._zone)).explain())


def zone(name: str) -> ZoneInfo:
    """The zone of an IANA name; ``InvalidTimezone`` for anything else, whatever the text."""
    if isinstance(name, str) and len(name) > MAX_ZONE_LENGTH:
        raise InvalidTimezone(
            f"unknown time zone {name[:MAX_ZONE_LENGTH]!r}...: IANA names are at most "
            f"{MAX_ZONE_LENGTH} characters long"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError) as exc:
        raise InvalidTimezone(
            f"unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin'"
        ) from exc


def _fields(expression: str) -> str:
    if not isinstance(expression, str):
        raise InvalidCron(f"a cron expression must be a string, got {type(expression).__name__}")
    if len(expression) > MAX_LENGTH:
        raise InvalidCron(
            f"cron expression {expression[:40]!r}... is {len(expression)} characters long; "
            f"at most {MAX_LENGTH} are stored"
        )
    text = " ".join(expression.split())
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise InvalidCron(
                f"unknown cron alias {expression!r}: use one of {', '.join(sorted(ALIASES))}"
            )
        return ALIASES[text.lower()]
    parts = text.split(" ")
    if len(parts) == 6:
        raise InvalidCron(
            f"cron expression {expression!r} has 6 fields: a seconds field is not supported "
            "(rota schedules to the minute)"
        )
    if len(parts) != 5:
        raise InvalidCron(
            f"cron expression {expression!r} has {len(parts)} fields; expected 5: "
            + " ".join(FIELDS)
        )
    try:
        CronSim(text, datetime(2000, 1, 1, tzinfo=timezone.utc))
    except CronSimError as exc:
        raise InvalidCron(f"invalid cron expression {expression!r}: {_name_field(exc)}") from exc
    for name, part, largest in zip(FIELDS, parts, LARGEST_STEP, strict=True):
        for item in part.split(","):
            _, slash, step = item.partition("/")
            if slash and not (step.isdigit() and int(step) <= largest):
                raise InvalidCron(
                    f"invalid cron expression {expression!r}: bad {name} field (step {step} "
                    f"is over {largest})"
                )
    return text


def _name_field(error: CronSimError) -> str:
    message = str(error)
    for name in FIELDS:
        if name in message.lower():
            return f"bad {name} field ({message})"
    return message
