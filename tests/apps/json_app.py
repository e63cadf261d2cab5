"""A service that chose ``Rota(log_format="json")``, run by ``rota worker`` in the log tests.

It logs while it is imported (before the worker knows the format), and its handlers log
through ``ctx.logger``, through a standard logger, and with a traceback.
"""

from __future__ import annotations

import logging
import os

from rota import JobContext, Rota

logger = logging.getLogger("tests.apps.json_app")
logger.info("importing the service")

app = Rota(
    os.environ["ROTA_TEST_URL"],
    table_prefix=os.environ["ROTA_TEST_PREFIX"],
    poll_interval=0.1,
    log_format="json",
)


@app.task(retries=0)
def greet(ctx: JobContext, name: str) -> str:
    ctx.logger.info("greeting %s", name)
    logger.warning("a standard logger\nwith a message on two lines")
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        ctx.logger.exception("caught and logged")
    return f"hello {name}"


@app.task(retries=0)
def crash(ctx: JobContext) -> None:
    raise RuntimeError("the handler gave up")
