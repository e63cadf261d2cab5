"""The CLI and the dashboard read and act through the façade (``rota.inspect`` and the
``Rota`` methods), never through the store it holds: what they can see is what any
application can, and the store stays free to change behind its protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import rota

PACKAGE = Path(rota.__file__).parent
TOOLS = ("cli", "dashboard")


def store_reads(path: Path, root: Path) -> list[str]:
    """Each ``<anything>.store`` in ``path``, as ``file:line`` with the file from ``root``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(root)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "store"
    ]


def test_the_cli_and_the_dashboard_never_reach_for_the_store() -> None:
    modules = [path for tool in TOOLS for path in sorted((PACKAGE / tool).rglob("*.py"))]
    assert len(modules) > 10, "the tools' modules are where this test looks"
    assert [hit for path in modules for hit in store_reads(path, PACKAGE)] == []


def test_the_check_finds_a_store_read_where_there_is_one(tmp_path: Path) -> None:
    module = tmp_path / "tool.py"
    module.write_text("def f(app):\n    return app.store.reads.jobs()\n", encoding="utf-8")
    assert store_reads(module, tmp_path) == ["tool.py:2"]
