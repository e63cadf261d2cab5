"""An unreachable database: retried with back-off, then DATABASE_UNAVAILABLE, no password shown."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from rota import JobContext, Rota
from rota.errors import DatabaseUnavailable, StoreError
from tests.conftest import server_url
from tests.helpers import eventually, sql_store

PASSWORD = "Sup3r-s3cret-pw"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["mysql", "postgresql"])
def test_unreachable_database_is_retried_then_reported_without_the_password(
    scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{scheme}://app:{PASSWORD}@127.0.0.1:{closed_port()}/orders"
    rota = Rota(url, connect_timeout=3.0)  # room for a slow first attempt on a loaded host

    @rota.task
    def noop(ctx: JobContext) -> None: ...

    with (
        caplog.at_level(logging.WARNING, logger="rota"),
        pytest.raises(DatabaseUnavailable) as info,
    ):
        asyncio.run(rota.start())
    error = info.value
    assert error.code == "DATABASE_UNAVAILABLE"
    assert "'orders'" in str(error) and "127.0.0.1" in str(error)
    retries = [r for r in caplog.records if getattr(r, "event", None) == "db.unavailable"]
    assert len(retries) >= 2, "retried with back-off before giving up"
    everything = str(error) + repr(error.__cause__) + caplog.text
    assert PASSWORD not in everything
    with pytest.raises(DatabaseUnavailable):
        rota.queue(noop)
    sql_store(rota).engine.dispose()


def test_a_permanent_error_at_start_is_raised_at_once_not_waited_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A missing schema (or a wrong password, an unknown database) will not pass by waiting:
    ``start()``, and so ``rota worker``, fail at once instead of retrying it as unreachable."""
    rota = Rota(f"sqlite:///{tmp_path}/empty.db", auto_migrate=False, connect_timeout=30)

    @rota.task
    def noop(ctx: JobContext) -> None: ...

    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="rota"), pytest.raises(StoreError) as info:
        asyncio.run(rota.start())
    assert time.monotonic() - began < 5
    assert info.value.code == "STORE_ERROR" and "run `rota migrate`" in str(info.value)
    assert not [r for r in caplog.records if getattr(r, "event", None) == "db.unavailable"]
    sql_store(rota).engine.dispose()


def test_an_unknown_mariadb_database_is_not_waited_for() -> None:
    url = make_url(server_url("mariadb")).set(database="no_such_database").render_as_string(False)
    rota = Rota(url, connect_timeout=30)
    began = time.monotonic()
    with pytest.raises(StoreError, match="1049") as info:
        asyncio.run(rota.start())
    assert time.monotonic() - began < 5
    assert not isinstance(info.value, DatabaseUnavailable)
    sql_store(rota).engine.dispose()


def test_start_cancelled_while_waiting_ends_the_wait_at_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``rota worker`` stopped by a signal while its database is down: the thread that waits
    must not sleep out its pause (here 60 s), which the event loop's shutdown would wait for."""
    monkeypatch.setattr("rota.runtime.services.readiness.FIRST_DELAY", 60.0)
    monkeypatch.setattr("rota.runtime.services.readiness.MAX_DELAY", 60.0)
    rota = Rota(f"mysql://app@127.0.0.1:{closed_port()}/orders")

    async def start_then_cancel() -> None:
        starting = asyncio.create_task(rota._host.start(None))
        await eventually(
            lambda: [r for r in caplog.records if getattr(r, "event", None) == "db.unavailable"]
        )
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting

    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(start_then_cancel())
    assert time.monotonic() - began < 10
    sql_store(rota).engine.dispose()
