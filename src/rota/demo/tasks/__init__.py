"""The service's task modules; importing this package registers every task on ``app``.

A worker runs only the tasks it has registered, so a new module must be listed here.
"""

from __future__ import annotations

from . import every_minute, flaky, welcome

TASKS = [every_minute, flaky, welcome]
