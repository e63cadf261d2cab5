"""The ASGI application, configured from the environment: ``uvicorn
examples.fastapi_app.main:app``.  ``rota worker examples.fastapi_app.main:rota`` runs more
workers for the same tasks beside it."""

from __future__ import annotations

import logging

from .api import create_app
from .settings import Settings
from .tasks import create_rota

logging.basicConfig(level=logging.WARNING, format="%(levelname)-8s %(name)s: %(message)s")
logging.getLogger("rota").setLevel(logging.INFO)  # the execution log: job.started, ...

settings = Settings.from_environ()
rota = create_rota(settings)
app = create_app(rota, dashboard_token=settings.dashboard_token)
