"""The README is the front page and nothing more: short, its set-up commands on the first screen,
no paragraph that the documentation also holds (two copies drift), and every link into the site
landing on a page and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SITE = "https://rota-jobs.github.io/rota/"
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def words(text: str) -> str:
    return " ".join(text.split())


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a page: code blocks and HTML comments left out, whitespace folded."""
    prose = FENCE.sub("\n\n", COMMENT.sub("", text))
    return [words(part) for part in re.split(r"\n\s*\n", prose) if part.strip()]


def docs_text() -> str:
    return "\n\n".join(page.read_text() for page in sorted(DOCS.rglob("*.md")))


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_the_first_screen_gives_the_two_set_up_commands() -> None:
    first_screen = "\n".join(README.read_text().splitlines()[:25])
    blocks = re.findall(r"^```sh\n(.*?)^```", first_screen, re.MULTILINE | re.DOTALL)
    commands = [line.split("#")[0].strip() for line in blocks[0].splitlines()]

    assert commands == ["scripts/demo", "scripts/test"]
    for command in commands:
        assert (ROOT / command).stat().st_mode & 0o111, f"{command} is not executable"


def test_the_readme_shares_no_paragraph_with_the_docs() -> None:
    docs = words(docs_text())
    shared = [
        paragraph
        for paragraph in paragraphs(README.read_text())
        if len(paragraph.split()) > 3 and paragraph in docs
    ]

    assert shared == []


def test_no_paragraph_of_the_docs_is_copied_into_the_readme() -> None:
    readme = words(README.read_text())
    copied = [
        paragraph
        for paragraph in paragraphs(docs_text())
        if len(paragraph.split()) > 8 and paragraph in readme
    ]

    assert copied == []


def test_the_shared_paragraph_check_finds_a_copied_paragraph() -> None:
    page = (DOCS / "concepts.md").read_text()
    borrowed = next(p for p in paragraphs(page) if len(p.split()) > 20)

    assert borrowed in words(docs_text())
    assert borrowed in paragraphs(README.read_text() + "\n\n" + borrowed + "\n")


def heading_anchors(page: Path) -> set[str]:
    slugify = pytest.importorskip("markdown.extensions.toc").slugify
    text = FENCE.sub("", page.read_text())
    headings = re.findall(r"^#{1,6} (.+?)\s*$", text, re.MULTILINE)
    return {slugify(heading.replace("`", ""), "-") for heading in headings}


def test_every_link_into_the_site_lands_on_a_page_and_heading() -> None:
    links = re.findall(rf"{re.escape(SITE)}([^)\s#]*)(?:#([^)\s]+))?", README.read_text())
    assert len(links) >= 10

    for path, anchor in links:
        stem = path.strip("/") or "index"
        page = next(
            (p for p in (DOCS / f"{stem}.md", DOCS / stem / "index.md") if p.is_file()), None
        )
        assert page is not None, f"{SITE}{path} is no page of docs/"
        if anchor:
            assert anchor in heading_anchors(page), f"{SITE}{path}#{anchor} is no heading"


def test_every_file_the_readme_links_exists() -> None:
    targets = re.findall(r"\]\((?!https?://)([^)#]+)\)", README.read_text())

    assert targets
    assert [target for target in targets if not (ROOT / target).exists()] == []
