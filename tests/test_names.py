"""One list each of event names and error codes: the enums, and what the source emits and
builds (their reference pages are checked against the enums in tests/docs).

Read from the source tree, so that an event logged with a name of its own, a name no code
emits or a code no class carries fails here."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import rota
from rota import errors
from rota.core.events import EventName
from rota.errors import ErrorCode

ROOT = Path(__file__).parent.parent
SOURCE = ROOT / "src" / "rota"
RECORD_MAKER = SOURCE / "store" / "events.py"
"""The one module that makes a log record carrying ``event``."""
NAMES = SOURCE / "core" / "events.py"
RECORD_MAKERS = {"LoggerAdapter", "makeLogRecord", "LogRecord"}


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def test_no_module_but_the_event_log_makes_a_record_that_carries_an_event() -> None:
    """A record gets attributes from ``extra=``, from a ``LoggerAdapter`` or ``makeLogRecord``
    dict, or set on it afterwards: only the record maker does any of that."""
    found = [
        where(path, node)
        for path, tree in modules()
        if path != RECORD_MAKER
        for node in ast.walk(tree)
        if _sets_record_attributes(node)
    ]
    assert found == [], "records with an event key are made by rota.store.events.log_event"
    maker = ast.parse(RECORD_MAKER.read_text())
    assert any(isinstance(n, ast.keyword) and n.arg == "extra" for n in ast.walk(maker))


def test_every_event_name_is_emitted_and_every_emission_names_a_member() -> None:
    used: set[str] = set()
    spelled = []
    texts = {name.value for name in EventName}
    for path, tree in modules():
        if path == NAMES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_name(node.value, "EventName"):
                used.add(node.attr)
            if isinstance(node, ast.Constant) and node.value in texts:
                spelled.append(f"{where(path, node)} {node.value!r}")
            if isinstance(node, ast.JoinedStr) and _prefixed(node, texts):
                spelled.append(f"{where(path, node)} an f-string event name")
    assert spelled == [], "rota names its events by EventName members, not by their text"
    assert used == {name.name for name in EventName}, "on() accepts exactly what is emitted"


def test_every_code_is_an_error_code_and_every_class_carries_one() -> None:
    classes = _error_classes()
    assert {error.code for error in classes} <= set(ErrorCode)
    assert len({error.code for error in classes}) == len(classes)
    assert {"LEASE_EXPIRED", "SNOOZE_LIMIT", "SERVER_READ_ONLY", "UNREADABLE_ROW"} <= set(ErrorCode)
    assert rota.ErrorCode is ErrorCode and rota.EventName is EventName
    assert {"ErrorCode", "EventName"} <= set(rota.__all__)


def test_the_code_tree_of_the_errors_module_names_each_class_and_its_code() -> None:
    assert errors.__doc__ is not None
    tree = re.findall(r"^\s+[│├└─ ]*(\w+)\s+([A-Z_]{4,})\b", errors.__doc__, re.MULTILINE)
    assert dict(tree) == {error.__name__: error.code for error in _error_classes()}
    parents = {error.__name__: error.__mro__[1].__name__ for error in _error_classes()}
    assert parents["DatabaseUnavailable"] == parents["TransientStoreError"] == "StoreError"
    assert "    │   ├── DatabaseUnavailable" in errors.__doc__


def _error_classes() -> list[type[errors.RotaError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.RotaError)
    ]


def _sets_record_attributes(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "event" for t in node.targets)
    if not isinstance(node, ast.Call):
        return False
    called = _called(node)
    if called == "setattr":
        return len(node.args) > 1 and _is_event(node.args[1])
    if called in RECORD_MAKERS:
        return any(_holds_event(argument) for argument in node.args)
    return any(keyword.arg == "extra" for keyword in node.keywords)


def _called(node: ast.Call) -> str | None:
    function = node.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else None


def _holds_event(node: ast.AST) -> bool:
    return isinstance(node, ast.Dict) and any(_is_event(key) for key in node.keys if key)


def _is_event(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "event"


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _prefixed(node: ast.JoinedStr, texts: set[str]) -> bool:
    """Whether an f-string starts like an event name (``f"job.{target}"``)."""
    first = node.values[0] if node.values else None
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return False
    prefixes = {text.split(".")[0] + "." for text in texts}
    return first.value in prefixes
