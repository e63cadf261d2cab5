"""The part of ``Rota``'s façade that acts on jobs by hand: one job or a schedule by id
(``runtime.services.control``), every job a ``Filter`` matches, finding them, and editing or
replaying one (``runtime.services.bulk``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, overload

from typing_extensions import Unpack

from rota.core.search import Filter, FilterFields, Page
from rota.errors import InvalidArguments
from rota.runtime.services.bulk import Bulk
from rota.runtime.services.control import Control


class JobCalls:
    _control: Control
    _bulk: Bulk

    def find(
        self,
        matching: Filter | None = None,
        /,
        *,
        limit: int = 100,
        cursor: str | None = None,
        **fields: Unpack[FilterFields],
    ) -> Page:
        """The jobs ``matching`` (or the filter ``fields``) reaches, newest first, a page of
        ``limit``; pass ``page.next_cursor`` as ``cursor`` for the next.

        >>> page = rota.find(state="failed", tags=["tenant:acme"], error_code="TIMEOUT")
        """
        return self._bulk.find(_filter(matching, fields), limit, cursor)

    def count(self, matching: Filter | None = None, /, **fields: Unpack[FilterFields]) -> int:
        """How many jobs the filter matches (what a bulk action on it would reach, at most)."""
        return self._bulk.count(_filter(matching, fields))

    @overload
    def cancel(self, id: int | str) -> bool: ...

    @overload
    def cancel(self, *, matching: Filter) -> int: ...

    def cancel(self, id: int | str | None = None, *, matching: Filter | None = None) -> Any:
        """Cancel a job (int id) or a schedule (its name); ``False`` if there is none or it had
        ended.  A running job is stopped at its worker's next heartbeat.  With ``matching``:
        every matching job, and how many were cancelled or asked to stop."""
        if matching is not None or id is None:
            return self._bulk.act("cancel", _only(id, matching))
        return self._control.cancel(id)

    @overload
    def retry(self, job_id: int) -> bool: ...

    @overload
    def retry(self, *, matching: Filter) -> int: ...

    def retry(self, job_id: int | None = None, *, matching: Filter | None = None) -> Any:
        """Move a failed or cancelled job back to pending with a fresh attempt budget; with
        ``matching``, every matching one, and how many moved."""
        if matching is not None or job_id is None:
            return self._bulk.act("retry", _only(job_id, matching))
        return self._control.retry(self._control.find(job_id))

    @overload
    def pause(self, id: int | str | None = None) -> bool: ...

    @overload
    def pause(self, *, matching: Filter) -> int: ...

    def pause(self, id: int | str | None = None, *, matching: Filter | None = None) -> Any:
        """Pause a schedule (by name) or a pending job (by id); with no id, every schedule and
        every queue.  ``False`` when nothing changed; an unknown id raises ``*NotFound``.  With
        ``matching``: every matching pending job, and how many were paused."""
        if matching is not None:
            return self._bulk.act("pause", _only(id, matching))
        return self._control.pause(id)

    @overload
    def resume(self, id: int | str | None = None) -> bool: ...

    @overload
    def resume(self, *, matching: Filter) -> int: ...

    def resume(self, id: int | str | None = None, *, matching: Filter | None = None) -> Any:
        """Resume a paused schedule from its first tick at or after now, or a paused job; with
        no id, every paused schedule and every paused queue.  With ``matching``: every matching
        paused job, and how many were resumed."""
        if matching is not None:
            return self._bulk.act("resume", _only(id, matching))
        return self._control.resume(id)

    @overload
    def delete(self, job_id: int) -> bool: ...

    @overload
    def delete(self, *, matching: Filter) -> int: ...

    def delete(self, job_id: int | None = None, *, matching: Filter | None = None) -> Any:
        """Delete a job that is not running nor waiting (pending, paused or finished), with
        its tags, steps and links; ``False`` if none was deleted.  With ``matching``: every
        matching such job, and how many were deleted."""
        if matching is not None or job_id is None:
            return self._bulk.act("delete", _only(job_id, matching))
        return self._bulk.delete(job_id)

    def update_job(
        self,
        job_id: int,
        *,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> bool:
        """Change a pending or paused job (``tags`` replaces its tags, ``meta`` its metadata);
        ``False`` once a worker claimed it or it ended (compare-and-set), ``JobNotFound``."""
        return self._bulk.update(job_id, run_at, priority, queue, tags, meta)

    def replay(self, job_id: int) -> int:
        """Queue a copy of a finished job (its task, arguments, queue, priority, tags and
        meta), due now and linked to it (``Job.replay_of``); the new job's id."""
        return self._bulk.replay(job_id)


def _filter(matching: Filter | None, fields: FilterFields) -> Filter:
    if matching is not None and fields:
        raise InvalidArguments("give a Filter or filter keywords, not both")
    return matching if matching is not None else Filter(**fields)


def _only(id: object, matching: Filter | None) -> Filter:
    """A bulk action's filter: given, and no id beside it."""
    if matching is None:
        raise InvalidArguments("give a job id, or matching=Filter(...)")
    if id is not None:
        raise InvalidArguments("give a job id or matching=, not both")
    return matching
