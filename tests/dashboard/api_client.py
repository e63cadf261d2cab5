"""A test client of the dashboard's HTTP API, with its three kinds of token."""

from __future__ import annotations

import warnings
from typing import Any

from rota import Rota
from rota.dashboard import create_app

with warnings.catch_warnings():
    # Starlette 1.x prefers httpx2 for its test client; httpx works the same for these tests.
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

__all__ = ["OPERATE", "READ", "TOKEN", "TestClient", "api_client", "bearer", "error_of"]

TOKEN = "dashboard-token-0123456789"
"""The dashboard's own token: the operate scope."""
READ = "read-only-token-0123456789"
OPERATE = "api-operate-token-0123456789"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_client(rota: Rota, sends: str | None = OPERATE, **options: Any) -> TestClient:
    """A client of ``rota``'s dashboard (``create_app``'s ``options``) that sends the token
    ``sends`` with every request."""
    options.setdefault("token", TOKEN)
    options.setdefault("api_tokens", {READ: "read", OPERATE: "operate"})
    client = TestClient(create_app(rota, **options), base_url="http://localhost")
    if sends is not None:
        client.headers.update(bearer(sends))
    return client


def error_of(response: Any, status: int, code: str) -> str:
    """The message of an error answer, checked to have ``status`` and ``code``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    return message
