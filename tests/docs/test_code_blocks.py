"""Every code block of README.md and docs/ runs, page by page, as the docs' conventions say
(tests/docs/blocks.py has the rules): an example that no longer works fails here, naming the
page and the line of its block, instead of misleading a reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import run_page
from tests.docs.claims import claim_problems

ROOT = Path(__file__).resolve().parent.parent.parent

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
IDS = [page.relative_to(ROOT).as_posix() for page in PAGES]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_the_pages_blocks_run(page: Path, tmp_path: Path) -> None:
    run_page(page, ROOT, tmp_path)


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_block_is_claimed_by_one_rule(page: Path) -> None:
    problems = claim_problems(page, ROOT)

    assert not problems, "\n".join(problems)
