"""The HTTP API: sign a user up (which queues their welcome mail), read a job, wait for its
result; rota's dashboard mounted at ``/rota``.

The worker runs inside this application's event loop: the lifespan enters ``async with rota``,
so the worker starts with the server and, at shutdown, stops claiming and gives running jobs
their grace before the process exits.  Requests share that loop, so nothing here calls the
database on it: ``aqueue`` and ``aresult`` do their round trips in threads, and ``rota.job``
(which has no async twin) is called through ``asyncio.to_thread``.  rota's refusals are typed
``RotaError``s with stable codes; ``rota_error`` turns them into JSON with a 4xx status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, JsonValue

from rota import (
    DatabaseUnavailable,
    InvalidArguments,
    Job,
    JobCancelled,
    JobFailed,
    JobNotFound,
    ResultTimeout,
    Rota,
    RotaError,
    TransientStoreError,
)
from rota.dashboard import create_app as create_dashboard

from .tasks import send_welcome

STATUS: tuple[tuple[type[RotaError], int], ...] = (
    (JobNotFound, 404),
    (InvalidArguments, 422),
    (JobFailed, 409),
    (JobCancelled, 409),
    (DatabaseUnavailable, 503),
    (TransientStoreError, 503),
)
"""The HTTP status of each refusal; any other ``RotaError`` is a 500."""


class Signup(BaseModel):
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$", max_length=254)
    name: str = Field(min_length=1, max_length=100)
    send_at: datetime | None = None
    """When to send the welcome mail (naive means UTC); now if not given."""


class Queued(BaseModel):
    job_id: int
    status_url: str


class Attempt(BaseModel):
    attempt: int
    code: str
    message: str


class JobOut(BaseModel):
    id: int
    task: str
    state: str
    attempt: int
    run_at: datetime
    finished_at: datetime | None
    result: JsonValue
    errors: list[Attempt]

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            task=job.task,
            state=job.state.value,
            attempt=job.attempt,
            run_at=job.run_at,
            finished_at=job.finished_at,
            result=job.result,
            errors=[Attempt(attempt=e.attempt, code=e.code, message=e.message) for e in job.errors],
        )


class Result(BaseModel):
    job_id: int
    result: JsonValue


def rota_of(request: Request) -> Rota:
    rota = request.app.state.rota
    assert isinstance(rota, Rota)
    return rota


RotaDep = Annotated[Rota, Depends(rota_of)]
router = APIRouter()


@router.get("/healthz")
async def health() -> dict[str, bool]:
    """For a load balancer's (and the tests') probe: answers once the lifespan has started."""
    return {"ok": True}


@router.post("/signups", status_code=202)
async def sign_up(signup: Signup, rota: RotaDep) -> Queued:
    """Queue the welcome mail; signing up twice before it is sent queues it once."""
    job_id = await rota.aqueue(
        send_welcome,
        signup.email,
        signup.name,
        run_at=signup.send_at,
        unique_key=f"welcome:{signup.email}",
    )
    return Queued(job_id=job_id, status_url=f"/jobs/{job_id}")


@router.get("/jobs/{job_id}")
async def job_status(job_id: int, rota: RotaDep) -> JobOut:
    return JobOut.of(await asyncio.to_thread(rota.job, job_id))


@router.get("/jobs/{job_id}/result", response_model=Result, responses={202: {"model": JobOut}})
async def job_result(
    job_id: int, rota: RotaDep, timeout: Annotated[float, Query(ge=0, le=30)] = 10
) -> Result | JSONResponse:
    """The job's result once it succeeded, waiting up to ``timeout`` seconds; a job still
    unfinished by then is a 202 with its status, one that failed a 409 with its error."""
    try:
        result = await rota.aresult(job_id, timeout=timeout)
    except ResultTimeout:
        job = JobOut.of(await asyncio.to_thread(rota.job, job_id))
        return JSONResponse(job.model_dump(mode="json"), status_code=202)
    return Result(job_id=job_id, result=result)


async def rota_error(request: Request, error: Exception) -> JSONResponse:
    """``{"code": ..., "detail": ...}`` with the status ``STATUS`` gives the error's type."""
    assert isinstance(error, RotaError)
    status = next((status for kind, status in STATUS if isinstance(error, kind)), 500)
    body: dict[str, JsonValue] = {"code": error.code, "detail": str(error)}
    if isinstance(error, JobFailed) and error.error is not None:
        body["error"] = {"code": error.error.code, "message": error.error.message}
    return JSONResponse(body, status_code=status)


def create_app(rota: Rota, *, dashboard_token: str) -> FastAPI:
    """The service over ``rota``, its worker running for as long as the application does."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with rota:
            yield

    app = FastAPI(title="Signups", lifespan=lifespan)
    app.state.rota = rota
    app.include_router(router)
    app.add_exception_handler(RotaError, rota_error)
    app.mount("/rota", create_dashboard(rota, token=dashboard_token))
    return app
