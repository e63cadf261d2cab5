"""The service's one ``Rota``, and its settings.

It lives in a module of its own so that the task modules can register on it without importing
the entry point (``service.app``), which imports them.  ``Rota()`` is given no URL nor options:
it reads ``$ROTA_DATABASE_URL`` and the ``ROTA_*`` variables of the environment file, and
refuses to run a worker when no database is named.
"""

from __future__ import annotations

from rota import Rota
from service.settings import Settings

settings = Settings.from_environ()
rota = Rota()
