"""Every block of a page is claimed by exactly one rule of tests/docs/blocks.py.

A page's test only runs the blocks some rule claims, so a block in a language no rule knows, or
whose directives no rule accepts, would be shown to readers and never run; two rules claiming
one block would run it twice in two ways. Directives that stand anywhere but right above a
block, or that no rule knows, would silently do nothing. Each of these is a problem here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from sybil.parsers.markdown.lexers import (
    FENCE,
    DirectiveInHTMLCommentLexer,
    RawFencedCodeBlockLexer,
)

from tests.docs.blocks import NotRunRule, rules
from tests.docs.page import DIRECTIVE, Directives, Page, directives_above

# Every fenced block, whatever its info string (none included), and every invisible block, as
# the rules' own lexers (Sybil's CodeBlockParser) find them.
FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)\n"))
INVISIBLE = DirectiveInHTMLCommentLexer(r"(invisible-)?code(-block)?", arguments=".+")
INVISIBLE_START = re.compile(r"[ \t]*<!--+[ \t]*(invisible-)?code(-block)?:")


def claim_problems(path: Path, root: Path) -> list[str]:
    """What is wrong with a page's blocks and directives, each naming the page and line."""
    page = Page(path.read_text(encoding="utf-8"), str(path.resolve()), root)
    claimed: dict[int, list[str]] = defaultdict(list)
    not_run: list[tuple[int, str]] = []
    for rule in rules(root):
        for region in rule(page):
            claimed[region.start].append(type(rule).__name__)
            if isinstance(rule, NotRunRule):
                not_run.append((page.line(region.start), region.parsed.directives.not_run))
    found = [(region.start, f"```{region.lexemes['info'].strip()}") for region in FENCES(page)]
    found += [
        (region.start, f"invisible {region.lexemes['arguments']}") for region in INVISIBLE(page)
    ]
    problems = []
    for start, what in sorted(found):
        by = claimed.get(start, [])
        if len(by) != 1:
            directives = directives_above(page.text, start)
            problems.append(
                f"{page.name}:{page.line(start)}: {what}"
                + (f" (docs: {'; '.join(directives)})" if directives else "")
                + f" is claimed by {' and '.join(by) if by else 'no rule'}"
            )
    problems += directive_problems(page)
    if any(not reason for _, reason in not_run):
        listing = "".join(f"\n  line {line}: {reason or '(no reason)'}" for line, reason in not_run)
        problems.append(
            f'{page.name}: a `docs: not-run` needs a reason="..."; this page does not run '
            f"{len(not_run)} block(s):{listing}"
        )
    return problems


def directive_problems(page: Page) -> list[str]:
    """Directive comments that no rule knows, or that stand anywhere but right above a block."""
    problems = []
    lines = page.text.splitlines()
    for index, line in enumerate(lines):
        match = DIRECTIVE.fullmatch(line)
        if match is None:
            continue
        unknown = Directives.read([match["text"]]).unknown
        if unknown:
            problems.append(f"{page.name}:{index + 1}: unknown directive `docs: {unknown[0]}`")
        below = index + 1
        while below < len(lines) and DIRECTIVE.fullmatch(lines[below]):
            below += 1
        if below == len(lines) or not (
            FENCE.match(lines[below]) or INVISIBLE_START.match(lines[below])
        ):
            problems.append(
                f"{page.name}:{index + 1}: `docs: {match['text']}` must stand on the line(s) "
                "right above a block"
            )
    return problems
