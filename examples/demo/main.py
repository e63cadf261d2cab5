"""``rota.demo.main`` under its source-tree name, for ``rota worker examples.demo.main:app``."""

from __future__ import annotations

from rota.demo.main import TASKS, app, main

__all__ = ["TASKS", "app", "main"]
