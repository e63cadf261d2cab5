"""A schedule's page and its changes: the edit form, the preview of its next runs, the reset of an
override.

Saving is refused, with nothing written, unless the form was loaded from the version of the
schedule now in the database: the form carries that version, and ``update_schedule`` /
``reset_schedule`` compare-and-set on it, so a change someone else made after the form was
loaded is never silently overwritten.  A refused
form is shown again with the values typed and the reason (the cron error, or the change made
meanwhile), so nothing typed is lost.  The actions run through ``DashboardApp.action``: CSRF
checked, inside ``rota.acting_as("dashboard:<caller>")``, and back to the page when saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from rota.app import Rota
from rota.dashboard.rendering import Renderer
from rota.dashboard.schedule_views import EditForm, preview, schedule_page
from rota.errors import (
    ConfigError,
    InvalidCron,
    InvalidTimezone,
    ScheduleConflict,
    ScheduleNotFound,
)

EDIT = "/edit"


def name_of(request: Request) -> str:
    return str(request.path_params["name"])


def posted_only(scope: Scope) -> bool:
    """Whether this address is an action's (``/schedules/<name>/pause``), which this page's
    route, taking any name, matched too: asked with GET, it is a 405 as any action's is."""
    posted = {**scope, "method": "POST"}
    return any(route.matches(posted)[0] is Match.FULL for route in scope["router"].routes)


class ScheduleEditing:
    """The endpoints of one schedule's page over ``rota``, rendered by ``renderer``."""

    def __init__(self, rota: Rota, renderer: Renderer) -> None:
        self.rota = rota
        self.renderer = renderer

    def page(self, request: Request) -> Response:
        """The schedule, its edit form (live schedules only) and its history, at
        ``/schedules/<name>``; ``<name>/edit``, the page's former address, still serves it when
        no schedule has that whole name (the router sees a name's ``%2F`` as ``/``)."""
        name = name_of(request)
        try:
            return self.show(request, schedule_page(self.rota, name))
        except ScheduleNotFound:
            if name.endswith(EDIT):
                return self.show(request, schedule_page(self.rota, name.removesuffix(EDIT)))
            if posted_only(request.scope):
                raise HTTPException(405, headers={"Allow": "POST"}) from None
            raise

    def preview(self, request: Request) -> Response:
        """The next runs of ``?cron=&tz=`` as an HTML fragment the page's script puts in place
        while the form is typed in; a rule that cannot be saved gives its error instead."""
        form = EditForm.of(request.query_params)
        context = {"preview": preview(form.cron, form.tz, self.rota.clock.now())}
        return self.renderer.render(request, "schedule_preview.html", context)

    def save(self, request: Request, fields: Mapping[str, str]) -> Response | None:
        """Change the schedule's rule (an override, for a schedule code defines); the page
        again, with the reason, when the form is stale or the rule cannot be saved."""
        name, form = name_of(request), EditForm.of(fields)
        if form.version is None:
            return self.refuse(request, form, 409, stale=True)
        try:
            self.rota.update_schedule(name, cron=form.cron, tz=form.tz, version=form.version)
        except (InvalidCron, InvalidTimezone) as error:
            return self.refuse(request, form, 400, problem=f"Not saved: {error}")
        except ScheduleConflict:
            return self.refuse(request, form, 409, stale=True)
        except ConfigError as error:
            return self.refuse(request, form, 409, problem=f"Not saved: {error}")
        return None

    def reset(self, request: Request, fields: Mapping[str, str]) -> Response | str | None:
        """End the override (back to the code's rule), unless the schedule changed since the
        page showed it: resetting then would discard a change nobody here has seen."""
        name, seen = name_of(request), EditForm.of(fields).version
        schedule = self.rota.get_schedule(name)
        shown = EditForm(schedule.spec.cron, schedule.spec.tz, seen)
        if seen is None:
            return self.refuse(request, shown, 409, stale=True)
        try:
            if not self.rota.reset_schedule(name, version=seen):
                return f"schedule {name!r} is not overridden: it already follows its code"
        except ScheduleConflict:
            return self.refuse(request, shown, 409, stale=True)
        except ConfigError as error:
            return str(error)
        return None

    def refuse(self, request: Request, form: EditForm, status: int, **why: Any) -> Response:
        """The page again, its form holding ``form``, and why it was not saved."""
        return self.show(request, schedule_page(self.rota, name_of(request), form, **why), status)

    def show(self, request: Request, context: dict[str, Any], status: int = 200) -> Response:
        return self.renderer.render(request, "schedule.html", context, status)
