"""The APP argument of ``rota worker`` and ``rota dashboard``: where the application's Rota is.

An application that runs this CLI inside a command of its own (Django's ``manage.py rota``)
gives its Rota as a ``Host`` (the click context's ``obj``) instead: APP may then be left out,
and ``--url`` and ``--table-prefix`` default to that Rota's (``rota.cli.common``).

``MODULE:ATTR`` imports a module (the current directory is importable); ``PATH.py:ATTR`` loads
a file as ``python PATH.py`` would, its directory importable, under its own name. Without
``:ATTR`` the module's only ``Rota`` is used. Whatever stops the command from finding a Rota,
an exception raised while the application imports included, is a usage error of one line
(exit code 2) that names the file and line of the application's code where it happened: the
command cannot start, and the loader's frames of a traceback would bury the line that matters.
The whole traceback is logged at DEBUG (``--log-level debug``), for an error raised deep in
the application's imports, where one line is not enough to find its cause.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import click

import rota
from rota.app import Rota
from rota.errors import RotaError

LIBRARIES = tuple(
    {str(Path(sysconfig.get_paths()[key])) for key in ("stdlib", "platstdlib", "purelib")}
    | {str(Path(rota.__file__).parent)}
)


logger = logging.getLogger("rota")
ROTA_COMMAND = (sys.executable, "-m", "rota")
"""This CLI, as a child process runs it (``rota worker --processes``)."""


class Unloadable(Exception):
    """Why the APP argument names no Rota."""


@dataclass(frozen=True)
class Host:
    """An application running this CLI as a command of its own, with its Rota."""

    rota: Callable[[], Rota]
    """Its Rota, asked for when a command needs it (it may be built at that moment)."""
    command: tuple[str, ...]
    """What runs this CLI in a child process with the same Rota (``worker --processes``)."""


class AppCommand(click.Command):
    """A command taking the Rota as its APP argument. Run by an application with its own
    Rota (``manage.py rota``), where APP does not apply, its usage leaves APP out and its help
    opens with ``hosted_help`` instead of the docstring's first paragraph."""

    def __init__(self, *args: Any, hosted_help: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hosted_help = hosted_help

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [p for p in pieces if p != "[APP]"] if ctx.find_object(Host) else pieces

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if ctx.find_object(Host) is None:
            super().format_help_text(ctx, formatter)
            return
        rest = (self.help or "").split("\n\n", 1)[1:]
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(self.hosted_help)
            for paragraph in rest:
                formatter.write_paragraph()
                formatter.write_text(inspect.cleandoc(paragraph))


def hosted() -> Host | None:
    """The ``Host`` of the command being run, if an application runs it."""
    context = click.get_current_context(silent=True)
    return context.find_object(Host) if context is not None else None


def load_app(target: str | None) -> Rota:
    """The ``Rota`` that ``target`` names (the host's when there is none), or a
    ``click.BadParameter`` saying why there is none."""
    if target is None:
        host = hosted()
        if host is None:
            raise click.UsageError("Missing argument 'APP'.")
        return host.rota()
    where, attribute = split(target)
    try:
        if not where:
            raise Unloadable("expected MODULE:ATTR or PATH.py:ATTR")
        try:
            module = import_file(where) if is_path(where) else import_module(where)
        except Unloadable:
            raise
        except Exception as error:
            logger.debug("importing %s raised", where, exc_info=error)
            raise Unloadable(describe(error)) from error
        app = find(module, attribute)
    except Unloadable as error:
        raise click.BadParameter(f"cannot load {target!r}: {error}", param_hint="'APP'") from error
    if not isinstance(app, Rota):
        raise click.BadParameter(
            f"{target!r} is a {type(app).__name__}, not a Rota", param_hint="'APP'"
        )
    return app


def split(target: str) -> tuple[str, str | None]:
    """``(module or path, attribute or None)``; a colon in a Windows path is not a separator."""
    where, colon, attribute = target.rpartition(":")
    if colon and attribute and all(part.isidentifier() for part in attribute.split(".")):
        return where, attribute
    return target, None


def child_command(target: str | None) -> list[str]:
    """How a child process runs this CLI on the same Rota, up to the command's name."""
    host = hosted()
    return list(host.command) if target is None and host is not None else [*ROTA_COMMAND]


def is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where


def import_module(name: str) -> ModuleType:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


def import_file(where: str) -> ModuleType:
    path = Path(where).resolve()
    if not path.is_file():
        raise Unloadable(f"no such file: {path}" if not path.exists() else f"not a file: {path}")
    if path.suffix != ".py" or not path.stem.isidentifier():
        raise Unloadable("a file to load must be named NAME.py, NAME a Python identifier")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    module = importlib.import_module(path.stem)
    loaded = getattr(module, "__file__", None)
    if loaded is None or Path(loaded).resolve() != path:
        raise Unloadable(
            f"it would import as module {path.stem!r}, which is {loaded or 'built in'}: "
            "rename the file"
        )
    return module


def find(module: ModuleType, attribute: str | None) -> Any:
    if attribute is None:
        found = {id(value): value for value in vars(module).values() if isinstance(value, Rota)}
        if len(found) != 1:
            count = "no" if not found else "more than one"
            raise Unloadable(f"{count} Rota in module {module.__name__!r}: name it as :ATTR")
        return next(iter(found.values()))
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise Unloadable(f"module {module.__name__!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    return value


def describe(error: Exception) -> str:
    """``Type: message (file, line N)``, the line the innermost one of the application's code."""
    text = f"{error.code if isinstance(error, RotaError) else type(error).__name__}: {error}"
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} ({error.filename}, line {error.lineno})"
    own = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith("<") and not frame.filename.startswith(LIBRARIES)
    ]
    return f"{text} ({own[-1].filename}, line {own[-1].lineno})" if own else text
