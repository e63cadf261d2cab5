"""How a documentation page's blocks are read: the block (language, ``title=``, the directives
above it, its source with snippets resolved), the page as a Sybil document, the commands of a
shell block and the comparison of printed output with a ``docs: output`` block.

Reading is kept apart from running (tests/docs/blocks.py) so that the rules that claim a block
and the check that every block is claimed read it the same way.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region

from tests.docs.sandbox import Sandbox

# One `<!-- docs: ... -->` comment on a line of its own.
DIRECTIVE = re.compile(r"[ \t]*<!--[ \t]*docs:[ \t]*(?P<text>.*?)[ \t]*-->[ \t]*")
TITLE = re.compile(r"""\btitle=(["'])(?P<title>.*?)\1""")
SNIPPET = "--8<--"
# A here-document's start (not a here-string, <<<), whose body belongs to the same command.
HEREDOC = re.compile(r"""(?<!<)<<(?!<)-?[ \t]*(["']?)(?P<end>\w+)\1""")


@dataclass(frozen=True)
class Directives:
    """What the ``<!-- docs: ... -->`` comments right above a block ask of it."""

    background: bool = False
    # Stop the page's background commands of the same text first, as Ctrl-C in their terminal.
    restart: bool = False
    exit_code: int = 0
    output: bool = False
    # The reason given with ``not-run`` ("" when there is none); None: the block runs.
    not_run: str | None = None
    unknown: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """No directive at all: the block runs the ordinary way of its language."""
        return self == Directives()

    @classmethod
    def read(cls, texts: list[str]) -> Directives:
        found: dict[str, Any] = {}
        unknown = []
        for text in texts:
            try:
                words = shlex.split(text)
            except ValueError:
                words = []
            if words == ["background"]:
                found["background"] = True
            elif words == ["restart"]:
                found["background"] = found["restart"] = True
            elif words == ["output"]:
                found["output"] = True
            elif len(words) == 2 and words[0] == "exit" and words[1].isdigit():
                found["exit_code"] = int(words[1])
            elif words[:1] == ["not-run"] and all(w.startswith("reason=") for w in words[1:]):
                found["not_run"] = " ".join(word.removeprefix("reason=") for word in words[1:])
            else:
                unknown.append(text)
        return cls(**found, unknown=tuple(unknown))


def directives_above(text: str, start: int) -> list[str]:
    """The texts of the directive comments on the lines right above the line at ``start``."""
    found: list[str] = []
    end = start
    while end > 0:
        line_start = text.rfind("\n", 0, end - 1) + 1
        match = DIRECTIVE.fullmatch(text, line_start, end - 1)
        if match is None:
            break
        found.insert(0, match["text"])
        end = line_start
    return found


@dataclass(frozen=True)
class Block:
    """A code block as the rules see it."""

    language: str
    title: str | None
    source: str
    directives: Directives
    # The file its tracebacks name: the page, or the one file a snippet block includes.
    filename: str
    # How many lines below the block's first line its source starts.
    first: int = 1

    @classmethod
    def of(cls, document: Document, region: Region, root: Path) -> Block:
        info = str(region.lexemes["arguments"]).strip()
        language, _, attributes = info.partition(" ")
        title = TITLE.search(attributes)
        source, included = include_snippets(str(region.lexemes["source"]), root)
        return cls(
            language=language.lower(),
            title=title["title"] if title else None,
            source=source,
            directives=Directives.read(directives_above(document.text, region.start)),
            filename=str(included) if included else document.path,
        )

    def padded(self, line: int) -> str:
        """The source, with its line numbers those of the page (or of the included file)."""
        if self.filename.endswith(".md"):
            return "\n" * (line + self.first - 1) + self.source
        return self.source


def include_snippets(source: str, root: Path) -> tuple[str, Path | None]:
    """Resolve the block form of pymdownx.snippets: the lines between two ``--8<--`` lines name
    files (relative to ``root``, mkdocs.yml's ``base_path``) whose text replaces them. Also
    the included file when that is all the block holds, for its tracebacks."""
    if SNIPPET not in source:
        return source, None
    parts: list[str] = []
    files: list[Path] = []
    around = ""
    inside = False
    for line in source.splitlines(keepends=True):
        if line.strip() == SNIPPET:
            inside = not inside
        elif inside and line.strip() and not line.lstrip().startswith(";"):
            files.append((root / line.strip()).resolve())
            parts.append(files[-1].read_text(encoding="utf-8"))
        elif not inside:
            parts.append(line)
            around += line
    alone = len(files) == 1 and not around.strip()
    return "".join(parts), files[0] if alone else None


class Page(Document):
    """A Sybil document that also holds the state of its run: the sandbox its blocks run in
    and what the block last run printed, which a ``docs: output`` block is compared with."""

    def __init__(self, text: str, path: str, root: Path) -> None:
        super().__init__(text, path)
        resolved = Path(path)
        self.name = str(
            resolved.relative_to(root.resolve())
            if resolved.is_relative_to(root.resolve())
            else resolved
        )
        self.stdout: str | None = None
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        assert self._sandbox is not None, "the page is not running"
        return self._sandbox

    @sandbox.setter
    def sandbox(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @staticmethod
    def of(example: Example) -> Page:
        assert isinstance(example.document, Page)
        return example.document

    def line(self, position: int) -> int:
        return self.text.count("\n", 0, position) + 1


def shell_commands(source: str) -> list[tuple[int, str]]:
    """The commands of a shell block, each with the line (from 0, in the block) it starts on:
    backslash continuations and here-documents belong to their command; blank lines and
    ``#`` comment lines are not commands."""
    lines = source.splitlines()
    commands = []
    index = 0
    while index < len(lines):
        start = index
        if not lines[index].strip() or lines[index].lstrip().startswith("#"):
            index += 1
            continue
        while lines[index].endswith("\\") and index + 1 < len(lines):
            index += 1
        heredoc = HEREDOC.search("\n".join(lines[start : index + 1]))
        if heredoc:
            index += 1
            while index < len(lines) and lines[index].strip() != heredoc["end"]:
                index += 1
        commands.append((start, "\n".join(lines[start : index + 1])))
        index += 1
    return commands


def output_difference(expected: str, printed: str) -> str | None:
    """None if ``printed`` is ``expected`` line for line (trailing spaces aside; ``...``
    matches anything within a line), else where they part."""
    want = [line.rstrip() for line in expected.rstrip("\n").splitlines()]
    got = [line.rstrip() for line in printed.rstrip("\n").splitlines()]
    for number, (pattern, line) in enumerate(zip_longest(want, got), 1):
        if pattern is None or line is None or not _line_pattern(pattern).fullmatch(line):
            return (
                f"the output differs from line {number} of the block on: "
                f"{pattern!r} expected, {line!r} printed\n"
                f"--- expected:\n{expected.rstrip()}\n--- printed:\n{printed.rstrip()}"
            )
    return None


def _line_pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.split("...")))
