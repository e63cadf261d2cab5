"""``python -m rota.demo``: run the demo service until Ctrl-C or SIGTERM."""

from __future__ import annotations

from .main import main

raise SystemExit(main())
