"""A griffe extension that shows rota's ReST-ish docstrings as Markdown code blocks.

rota's docstrings are written for ``help()`` and the source: ``>>>`` examples and ``::`` literal
blocks, definition lists. Markdown reads a ``>>>`` line as three nested quotes, prints a bare
``::`` and takes a definition for an indented code block, so before mkdocstrings renders a
docstring this turns each run of ``>>>`` lines into a ``pycon`` fence, each ``::`` block into a
fence (``python`` when it parses as Python, else ``text``) and each ReST definition (a term, its
text indented under it) into a Markdown one (the ``def_list`` extension). The source stays as it
is; only the site's copy of each docstring changes.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

import griffe


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _fence(lines: list[str], language: str, indent: int) -> list[str]:
    pad = " " * indent
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [f"{pad}```{language}", *(pad + line if line else "" for line in body), f"{pad}```"]


def _language(lines: list[str]) -> str:
    try:
        ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return "text"
    return "python"


_NOT_A_TERM = re.compile(r"\s*([-*+] |\d+\. |>>>|\.\.\.)")


def _is_term(lines: list[str], i: int, after_definition: bool) -> bool:
    """A ReST term: after a blank line or another definition, with text indented under it."""
    if i + 1 >= len(lines) or not lines[i].strip() or not lines[i + 1].strip():
        return False
    if not (i == 0 or not lines[i - 1].strip() or after_definition):
        return False
    return _indent(lines[i + 1]) > _indent(lines[i]) and not _NOT_A_TERM.match(lines[i])


def convert(text: str) -> str:
    """Return ``text`` with its doctest runs and ``::`` literal blocks as fenced code, and its
    definition lists in Markdown's form."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    after_definition = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped.endswith("::") and _is_term(lines, i, after_definition):
            base = _indent(line)
            i += 1
            definition: list[str] = []
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > base:
                definition.append(lines[i])
                i += 1
            body = textwrap.dedent("\n".join(definition)).splitlines()
            pad = " " * base
            out.extend(
                ["", line, f"{pad}:   {body[0]}", *(f"{pad}    {rest}" for rest in body[1:])]
            )
            after_definition = True
            continue
        after_definition = False
        if stripped.startswith(">>>"):
            # A doctest run: the prompts, their continuations and output, up to a blank line.
            start = i
            while i < len(lines) and lines[i].strip():
                i += 1
            if out and out[-1].strip():
                out.append("")  # a fence right under a paragraph would be part of it
            out.extend(_fence(lines[start:i], "pycon", _indent(line)))
            continue
        if stripped.endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            # A ReST literal block: the lines indented deeper than this one, blanks between them.
            if stripped != "::":
                out.append(line[: line.rindex("::")] + ":")
            base = _indent(line)
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
                i -= 1
            while block and not block[0].strip():
                block.pop(0)
            out.append("")
            out.extend(_fence(block, _language(block), base))
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RestDocstrings(griffe.Extension):
    """Rewrite each object's docstring once griffe has read it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
