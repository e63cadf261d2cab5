"""A service whose import takes a long time, run by ``rota worker`` in tests/cli/test_startup.py.

A supervised worker process (one that ``rota worker --processes`` started), or any process
given ``ROTA_TEST_SLOW_IMPORT``, marks ``importing`` in its marks file and then sleeps
``ROTA_TEST_IMPORT_SECONDS`` (default 60) while importing this module: the test can stop it
while it is still importing, as a deploy stops a service whose workers have not started yet.
The supervisor's own import (it reads the app's log format) is quick.  Configured from the
environment as tests/apps/process_app.py is.
"""

from __future__ import annotations

import os
import time

from rota.environment import SUPERVISOR_FD
from tests.apps.environment import marks_file, rota_from_environment

if SUPERVISOR_FD in os.environ or "ROTA_TEST_SLOW_IMPORT" in os.environ:
    os.write(marks_file("slow_app"), b"importing\n")
    time.sleep(float(os.environ.get("ROTA_TEST_IMPORT_SECONDS", "60")))

app = rota_from_environment()


@app.task()
def noop() -> None:
    pass
