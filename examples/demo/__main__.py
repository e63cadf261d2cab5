"""``python -m examples.demo``: ``rota demo`` from the source tree."""

from __future__ import annotations

from rota.demo.main import main

raise SystemExit(main())
