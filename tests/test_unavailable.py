"""An unreachable database: retried with back-off, then DATABASE_UNAVAILABLE, no password shown."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from rota import JobContext, Rota
from rota.errors import DatabaseUnavailable

PASSWORD = "Sup3r-s3cret-pw"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("scheme", ["mysql", "postgresql"])
def test_unreachable_database_is_retried_then_reported_without_the_password(
    scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{scheme}://app:{PASSWORD}@127.0.0.1:{closed_port()}/orders"
    rota = Rota(url, connect_timeout=1.5)

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
    rota.store.engine.dispose()
