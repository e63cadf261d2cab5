"""``python -m service``: the worker, until SIGTERM."""

from __future__ import annotations

from service.app import main

raise SystemExit(main())
