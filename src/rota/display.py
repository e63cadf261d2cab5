"""How times, durations and progress are shown to people, the same in the CLI and the
dashboard."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from rota.core.model import JobState, Progress

NONE = "-"


def when(moment: datetime | None) -> str:
    """A time in UTC, to the second."""
    if moment is None:
        return NONE
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def local(moment: datetime, zone: Any) -> str:
    """A time in a schedule's zone, with its offset."""
    return moment.astimezone(zone).isoformat(sep=" ", timespec="minutes")


def span(delta: timedelta) -> str:
    """A duration for people: ``45s``, ``3m 5s``, ``2h 10m``, ``4d 3h``."""
    seconds = max(0, int(delta.total_seconds()))
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"


def took(delta: timedelta | None) -> str:
    """How long an attempt ran: ``12ms``, ``3.4s``, ``2m 5s``."""
    if delta is None:
        return NONE
    seconds = delta.total_seconds()
    if seconds < 1:
        return f"{max(0.0, seconds) * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    return span(delta)


def progress(value: Progress | None) -> str:
    """``40% 4 of 10 files``: a whole percentage, never ``100%`` before the end nor ``0%``
    after the start (MySQL keeps the fraction in single precision), then the note as stored;
    the caller escapes it."""
    if value is None:
        return NONE
    percent = 100 if value.fraction >= 1 else min(99, round(value.fraction * 100))
    if value.fraction > 0 and percent == 0:
        percent = 1
    return f"{percent}% {value.note}" if value.note else f"{percent}%"


def job_state(state: JobState, unknown_state: str | None = None) -> str:
    """A job's state; one rota does not know, as the row holds it: ``archived (unreadable)``.
    The caller escapes it."""
    return state.value if unknown_state is None else f"{unknown_state} (unreadable)"
