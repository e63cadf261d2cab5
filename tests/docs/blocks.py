"""The rules that run a documentation page's code blocks, as Sybil parsers.

A page shows code that readers copy, so every block of README.md and docs/ runs, page by page,
top to bottom, in a fresh directory on a SQLite database of its own (tests/docs/sandbox.py):

- ```python runs in the page's one namespace, in this process (top-level ``await`` allowed);
  with a ``title="path"`` it is written to that path instead, for later blocks to import.
- ```pycon is a doctest in that namespace.
- ```sh: each command runs with bash and must exit 0; ``<!-- docs: exit N -->`` on the line
  above expects N instead; ``<!-- docs: background -->`` leaves the commands running until the
  page ends, when SIGTERM must stop each cleanly; ``<!-- docs: restart -->`` first stops the
  running background commands of the same text (a reader's Ctrl-C), then starts them again.
- ```text after ``<!-- docs: output -->`` is what the block before it printed (``...``
  matches anything within a line); any other ```text is an illustration, not code.
- ```toml, ```yaml, ```json and ```ini must parse (and are written to their ``title=``);
  ```sql runs on MariaDB.
- ``<!-- docs: not-run reason="..." -->``: code that cannot run here (another system's, a
  systemd unit), which is still parsed, compiled or ``bash -n``'d.
- Setup a reader need not see is Sybil's ``<!-- invisible-code-block: LANG`` ... ``-->``.
- A ``--8<--`` block (pymdownx.snippets) runs the files it includes.

Each rule is a Sybil ``CodeBlockParser`` that claims blocks by their language, ``title=`` and
directives. The rules are disjoint on purpose, and tests/docs/claims.py reports a block that no
rule or two rules claim: a page cannot show code that silently never runs.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import doctest
import importlib
import inspect
import io
import json
import subprocess
import sys
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sybil import Document, Example, Region
from sybil.evaluators.doctest import DocTest
from sybil.example import SybilFailure
from sybil.parsers.markdown import CodeBlockParser

from rota import Rota
from tests.docs.page import Block, Page, output_difference, shell_commands
from tests.docs.sandbox import PAGE_MODULE, Sandbox
from tests.requirements import program, require

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

SHELLS = frozenset({"sh", "bash", "shell"})
DATA = frozenset({"toml", "yaml", "json", "ini"})
FILES = frozenset({"python", "text", *SHELLS, *DATA})


class BlockFailure(AssertionError):
    """A block did not do what its page says; ``line`` is the page's line to look at."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class PageFailure(AssertionError):
    """A page's blocks failed; the message names the page and line of each failure."""


class Rule(CodeBlockParser):
    """A Sybil parser for the blocks one rule claims (``claims``) and runs (``evaluate``)."""

    # CodeBlockParser matches one language; a rule matches on ``claims`` instead.
    language = "*"

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def claims(self, block: Block) -> bool:
        raise NotImplementedError

    def __call__(self, document: Document) -> Iterator[Region]:
        for region in self.lexers(document):
            block = Block.of(document, region, self.root)
            if self.claims(block):
                region.parsed = block
                region.evaluator = self.evaluate
                yield region

    def evaluate(self, example: Example) -> str | None:
        raise NotImplementedError


class PythonRule(Rule):
    """```python: runs in the page's one namespace, in this process (top-level ``await`` on
    the page's event loop); what it prints is kept for a ``docs: output`` block."""

    def claims(self, block: Block) -> bool:
        return block.language == "python" and block.title is None and block.directives.plain

    def evaluate(self, example: Example) -> None:
        page, block = Page.of(example), example.parsed
        code = compile(
            block.padded(example.line),
            block.filename,
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                if code.co_flags & inspect.CO_COROUTINE:
                    page.sandbox.loop.run_until_complete(eval(code, example.namespace))
                else:
                    exec(code, example.namespace)
        finally:
            page.stdout = printed.getvalue()
        return None


class PyconRule(Rule):
    """```pycon: a doctest in the page's namespace (``...`` matches anything)."""

    def claims(self, block: Block) -> bool:
        return block.language == "pycon" and block.title is None and block.directives.plain

    def evaluate(self, example: Example) -> str | None:
        page, block = Page.of(example), example.parsed
        examples = doctest.DocTestParser().get_examples(block.source)
        test = DocTest(examples, example.namespace, page.name, page.path, example.line, None)
        report: list[str] = []
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, out=report.append, clear_globs=False)
        return "".join(report) or None


class ShellRule(Rule):
    """```sh: each command runs with bash in the page's directory and must exit 0 (or the code
    of ``docs: exit N``); with ``docs: background`` they are left running until the page ends."""

    def claims(self, block: Block) -> bool:
        directives = block.directives
        return (
            block.language in SHELLS
            and block.title is None
            and directives.not_run is None
            and not directives.output
            and not directives.unknown
        )

    def evaluate(self, example: Example) -> None:
        page, block = Page.of(example), example.parsed
        commands = [
            (example.line + block.first + offset, command)
            for offset, command in shell_commands(block.source)
        ]
        if block.directives.restart:
            stopped = page.sandbox.stop_background({command for _, command in commands})
            if stopped:
                raise BlockFailure(example.line, "\n".join(stopped))
        if block.directives.background:
            lines = {f"{page.name}:{line}": line for line, _ in commands}
            ended = page.sandbox.start(
                [(command, where) for where, (_, command) in zip(lines, commands, strict=True)]
            )
            if ended:
                raise BlockFailure(lines[ended.where], ended.ended_early())
            return
        printed = []
        for line, command in commands:
            finished = page.sandbox.run(command)
            printed.append(finished.stdout)
            page.stdout = "".join(printed)
            if finished.code != block.directives.exit_code:
                outcome = (
                    f"exited {finished.code}, not {block.directives.exit_code}"
                    if finished.code is not None
                    else "timed out"
                )
                raise BlockFailure(
                    line,
                    f"`{command}` {outcome}\n--- stdout:\n{finished.stdout}"
                    f"--- stderr:\n{finished.stderr}",
                )


class OutputRule(Rule):
    """```text after ``docs: output``: what the block before it printed, line by line; ``...``
    in a line matches anything within that line."""

    def claims(self, block: Block) -> bool:
        directives = block.directives
        return (
            block.language == "text"
            and block.title is None
            and directives.output
            and directives.not_run is None
            and not (directives.background or directives.exit_code or directives.unknown)
        )

    def evaluate(self, example: Example) -> str | None:
        page = Page.of(example)
        if page.stdout is None:
            return "a `docs: output` block must follow a block that runs"
        return output_difference(example.parsed.source, page.stdout)


class IllustrationRule(Rule):
    """```text without a directive: a synopsis or a diagram, which is not code."""

    def claims(self, block: Block) -> bool:
        return block.language == "text" and block.title is None and block.directives.plain

    def evaluate(self, example: Example) -> None:
        return None


class DataRule(Rule):
    """```toml, ```yaml, ```json, ```ini: the text must parse."""

    def claims(self, block: Block) -> bool:
        return block.language in DATA and block.title is None and block.directives.plain

    def evaluate(self, example: Example) -> None:
        check_syntax(example.parsed, example.line, Page.of(example))


class FileRule(Rule):
    """A block with a Material ``title="path"``: written to that path in the page's directory,
    for later blocks and commands to import or run, and checked as its language is."""

    def claims(self, block: Block) -> bool:
        return block.language in FILES and block.title is not None and block.directives.plain

    def evaluate(self, example: Example) -> None:
        page, block = Page.of(example), example.parsed
        target = (page.sandbox.directory / block.title).resolve()
        if not target.is_relative_to(page.sandbox.directory.resolve()):
            raise BlockFailure(example.line, f"title={block.title!r} is outside the page's dir")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.source)
        importlib.invalidate_caches()
        check_syntax(block, example.line, page)


class NotRunRule(Rule):
    """``docs: not-run reason="..."``: code that cannot run here (another system's, a systemd
    unit, ...) is still checked as far as it can be: parsed, compiled, ``bash -n``'d."""

    def claims(self, block: Block) -> bool:
        directives = block.directives
        return directives.not_run is not None and not (
            directives.background or directives.exit_code or directives.output or directives.unknown
        )

    def evaluate(self, example: Example) -> None:
        check_syntax(example.parsed, example.line, Page.of(example))


class SqlRule(Rule):
    """```sql: runs on MariaDB (``ROTA_TEST_MYSQL_URL``), in a database made for the page."""

    def claims(self, block: Block) -> bool:
        return block.language == "sql" and block.title is None and block.directives.plain

    def evaluate(self, example: Example) -> None:
        page, block = Page.of(example), example.parsed
        rows: list[tuple[Any, ...]] = []
        try:
            with page.sandbox.mariadb().cursor() as cursor:
                cursor.execute(block.source)
                rows += cursor.fetchall() or ()
                while cursor.nextset():
                    rows += cursor.fetchall() or ()
        except importlib.import_module("pymysql").MySQLError as error:
            raise BlockFailure(example.line, f"MariaDB refused the SQL: {error}") from None
        page.stdout = "".join("\t".join(map(str, row)) + "\n" for row in rows)


def check_syntax(block: Block, line: int, page: Page) -> None:
    """Parse or compile a block as its language is, without running it."""
    try:
        if block.language == "python":
            compile(block.padded(line), block.filename, "exec", dont_inherit=True)
        elif block.language == "toml":
            tomllib.loads(block.source)
        elif block.language == "json":
            json.loads(block.source)
        elif block.language == "yaml":
            list(importlib.import_module("yaml").safe_load_all(block.source))
        elif block.language == "ini":
            configparser.ConfigParser(strict=False, interpolation=None).read_string(block.source)
        elif block.language in SHELLS:
            checked = subprocess.run(
                ["bash", "-n"], input=block.source, capture_output=True, text=True, check=False
            )
            if checked.returncode:
                raise ValueError(checked.stderr)
        elif block.language in ("js", "javascript"):
            require(program("node"))
            script = page.sandbox.logs / f"check-{line}.mjs"
            script.write_text(block.source)
            checked = subprocess.run(
                ["node", "--check", str(script)], capture_output=True, text=True, check=False
            )
            if checked.returncode:
                raise ValueError(checked.stderr)
    except Exception as error:
        raise BlockFailure(line, f"the {block.language} block does not parse: {error}") from None


def rules(root: Path) -> list[Rule]:
    """Every rule, for pages whose ``--8<--`` snippets are relative to ``root``."""
    kinds: list[type[Rule]] = [
        PythonRule,
        PyconRule,
        ShellRule,
        OutputRule,
        IllustrationRule,
        DataRule,
        FileRule,
        NotRunRule,
        SqlRule,
    ]
    return [kind(root) for kind in kinds]


def run_page(path: Path, root: Path, workdir: Path) -> None:
    """Run a page's blocks in order in a fresh ``Sandbox`` under ``workdir``; ``PageFailure``
    names the page and line of the block that failed, and of background commands that did not
    end well."""
    page = Page(path.read_text(encoding="utf-8"), str(path.resolve()), root)
    for rule in rules(root):
        for region in rule(page):
            page.add(region)
    module = types.ModuleType(PAGE_MODULE)
    page.namespace = module.__dict__
    failures = []
    with Sandbox(workdir / "page", workdir / "logs") as sandbox:
        page.sandbox = sandbox
        sys.modules[PAGE_MODULE] = module
        try:
            for example in page:
                failure = run_example(page, example)
                if failure:
                    failures.append(failure)
                    break
        finally:
            failures.extend(sandbox.stop_background())
            release(page, sandbox)
    if failures:
        raise PageFailure("\n\n".join(failures))


def run_example(page: Page, example: Example) -> str | None:
    """Run one block: None if it did what the page says, else why not, naming the line."""
    try:
        example.evaluate()
    except BlockFailure as failure:
        return f"{page.name}:{failure.line}: {failure}"
    except SybilFailure as failure:
        return f"{page.name}:{example.line}: {failure.result}"
    except Exception as error:
        block = example.parsed
        raised = traceback.TracebackException.from_exception(error)
        printed = f"--- printed:\n{page.stdout[-2000:]}" if page.stdout else ""
        return (
            f"{page.name}:{example.line}: the {block.language} block raised:\n"
            + "".join(_from_block(raised, block.filename))
            + printed
        )
    return None


def _from_block(error: traceback.TracebackException, filename: str) -> Iterator[str]:
    """The traceback from the block's own frame on: the runner's frames are noise."""
    frames = [frame.filename for frame in error.stack]
    if filename in frames:
        error.stack = traceback.StackSummary.from_list(error.stack[frames.index(filename) :])
    return error.format()


def release(page: Page, sandbox: Sandbox) -> None:
    r"""Close the ``Rota``\ s and SQLAlchemy engines a page made (in its namespace or its
    modules), so that no connection to its database outlives it."""
    places = [page.namespace]
    places += [vars(module) for module in list(sys.modules.values()) if sandbox.owns(module)]
    for place in places:
        for value in list(place.values()):
            if isinstance(value, Rota):
                value.close()
            elif isinstance(value, Engine):
                value.dispose()
