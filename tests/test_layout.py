"""The shape of the source tree: no import cycle among rota's modules, no module over 400 lines.

An import inside a function counts like one at the top: importing late to break a cycle hides
it without removing it.  Only imports under ``if TYPE_CHECKING:`` are left out, as they are
annotations that never run (the import contracts of ``pyproject.toml`` leave them out too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
MAX_LINES = 400


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((SRC / "rota").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def checks_type(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports anywhere under ``node`` but in the body of an ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and checks_type(child):
            for other in child.orelse:
                yield from import_nodes(ast.Module(body=[other], type_ignores=[]))
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from import_nodes(child)


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of rota that module ``name`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = node.module or ""
            if node.level:
                module = f"{base}.{module}" if module else base
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                for alias in node.names
            ]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def a_cycle(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One path around ``component``, from its first module back to it."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return component


def test_no_import_cycle() -> None:
    known = modules()
    graph = {name: imported(name, path, known) for name, path in known.items()}
    found = [" -> ".join(a_cycle(component, graph)) for component in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_no_module_over_400_lines() -> None:
    lengths = {
        path.relative_to(SRC): len(path.read_text(encoding="utf-8").splitlines())
        for path in modules().values()
    }
    long = [
        f"{path}: {lines} lines" for path, lines in sorted(lengths.items()) if lines > MAX_LINES
    ]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_an_import_in_a_function_counts_and_one_for_type_checking_does_not(tmp_path: Path) -> None:
    module = tmp_path / "a.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from rota import b\n"
        "if TYPE_CHECKING:\n    from rota import c\n"
        "def late():\n    from rota.d import name\n"
    )
    known = {name: tmp_path for name in ("rota", "rota.a", "rota.b", "rota.c", "rota.d")}
    assert imported("rota.a", module, known) == {"rota.b", "rota.d"}
    graph = {"rota.a": {"rota.d"}, "rota.b": set(), "rota.d": {"rota.b", "rota.a"}}
    assert cycles(graph) == [["rota.a", "rota.d"]]
    assert a_cycle(["rota.a", "rota.d"], graph) == ["rota.a", "rota.d", "rota.a"]
