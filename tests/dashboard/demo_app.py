"""An application module for ``rota dashboard`` to load; nothing connects to its database."""

from __future__ import annotations

import os
import tempfile

from rota import Rota

app = Rota(
    f"sqlite:///{os.path.join(tempfile.gettempdir(), 'rota-dashboard-cli.db')}",
    auto_migrate=False,
)
