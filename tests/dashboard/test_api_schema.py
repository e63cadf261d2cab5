"""The HTTP API against its own OpenAPI document: schemathesis generates requests for every
operation it describes, and each answer must be no server error, of a documented status and
content type, and match its schema.  Bounded and deterministic: few examples per operation,
derandomized, no deadline (the database's speed is not what is tested)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import APIOperation, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok

from rota import JobContext, Rota
from rota.dashboard import create_app
from rota.dashboard.api import TABLE

pytestmark = pytest.mark.sqlite_only

Operation = APIOperation[Any, Any, Any, Any]

TOKEN = "operate-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def seeded(rota: Rota) -> Rota:
    """A job that ran and a code schedule, so reads have something to show."""

    @rota.task
    def greet(ctx: JobContext, name: str = "ada") -> None: ...

    @rota.task(cron="*/5 * * * *")
    def tick(ctx: JobContext) -> None: ...

    rota.queue(greet, "bob")
    rota.drain()
    return rota


def operation_of(result: Ok[Operation] | Err[InvalidSchema]) -> Operation:
    assert isinstance(result, Ok), result
    return result.ok()


def test_every_answer_matches_the_document(make_rota: Callable[..., Rota]) -> None:
    app = create_app(seeded(make_rota()), token=TOKEN)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [operation_of(result) for result in schema.get_all_operations()]
    assert len(operations) == len(TABLE)  # schemathesis leaves the document's own path out
    # Valid requests, and requests the document forbids.
    modes = [GenerationMode("positive"), GenerationMode("negative")]
    cases = [(operation, mode) for operation in operations for mode in modes]
    for operation, mode in cases:

        @given(case=operation.as_strategy(mode))
        @settings(
            max_examples=30,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def answers(case: Any) -> None:
            case.call_and_validate(headers=AUTH, checks=CHECKS)

        answers()
