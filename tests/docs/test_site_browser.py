"""Every page of the documentation site in headless Chromium, at a desktop's width (1280x800) and
a phone's (390x844): nothing makes the page scroll sideways, and whatever of the content is
wider than the screen (a table, a code block, an image, a long word) scrolls in a box of its own
(Material wraps tables in ``.md-typeset__scrollwrap``; a code block scrolls in its ``code``), so
that a reader on a phone never has to pan the whole page to read one line.

The site is built as ``tests/test_docs.py`` builds it (``mkdocs build --strict``, on a copy) and
served under its ``site_url``'s path, /rota/, so that the 404 page's absolute links resolve too.
``scripts/screenshots docs`` saves screenshots of it (``test_screenshots``)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium_page, missing
from tests.requirements import skipped_outside_ci
from tests.test_docs import build, copy_site_source

pytestmark = [pytest.mark.slow, skipped_outside_ci(missing())]

WIDTHS = {"desktop": (1280, 800, False), "phone": (390, 844, True)}
OVERFLOW = """() => {
  const root = document.documentElement;
  const viewport = root.clientWidth;
  const found = [];
  if (root.scrollWidth > viewport) {
    found.push(`the page is ${root.scrollWidth}px wide on a ${viewport}px screen`);
  }
  const within = (box) => box.left >= -0.5 && box.right <= viewport + 0.5;
  const inScroller = (node) => {
    for (let at = node.parentElement; at && at !== document.body; at = at.parentElement) {
      const scrolls = ["auto", "scroll"].includes(getComputedStyle(at).overflowX);
      if (scrolls && within(at.getBoundingClientRect())) return true;
    }
    return false;
  };
  const content = document.querySelector(".md-content");
  const walker = document.createTreeWalker(content, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  let reported = null;
  for (let node = walker.nextNode(); node && found.length < 10; node = walker.nextNode()) {
    if (reported && reported.contains(node)) continue;
    let box;
    if (node.nodeType === Node.TEXT_NODE) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      box = range.getBoundingClientRect();
    } else {
      if (node.getClientRects().length === 0) continue;
      box = node.getBoundingClientRect();
    }
    if (box.width === 0 || within(box) || inScroller(node)) continue;
    reported = node;
    const element = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    const text = (node.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 60);
    found.push(`<${element.tagName.toLowerCase()}> "${text}" spans ${Math.round(box.left)}` +
      `-${Math.round(box.right)}px`);
  }
  return found;
}"""
"""What does not fit the screen: the page wider than the viewport, and the first ten elements
or runs of text of the content that reach past either edge and are in no horizontal scroller
that itself fits (each named, not its descendants)."""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Not a line on stderr per request."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site, in a directory of its own."""
    source = copy_site_source(tmp_path_factory.mktemp("docs"))
    built = build(source)
    assert built.returncode == 0, built.stderr
    return source / "site"


@dataclass(frozen=True)
class Served:
    """A web root (``root``) at ``base``; the site is its rota/, a test may put more beside."""

    base: str
    root: Path


@pytest.fixture(scope="module")
def served(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("web")
    (root / "rota").symlink_to(site, target_is_directory=True)
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", root)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def pages(site: Path) -> list[str]:
    """Every page of the site, as its path under /rota/ (``cli/``, ``404.html``)."""
    found = [path.relative_to(site).as_posix() for path in site.rglob("*.html")]
    return sorted(path.removesuffix("index.html") for path in found)


def overflow(page: Any, url: str) -> list[str]:
    page.goto(url)  # and wait for its load event: styles, scripts and images are in
    found: list[str] = page.evaluate(OVERFLOW)
    return found


def test_every_page_of_the_site_is_listed(site: Path) -> None:
    listed = pages(site)

    assert {"", "reference/rota/", "404.html"} <= set(listed)
    assert len(listed) > 10


@pytest.mark.parametrize("width", list(WIDTHS))
def test_no_page_is_wider_than_the_screen(site: Path, served: Served, width: str) -> None:
    problems = {}
    with chromium_page(*WIDTHS[width]) as page:
        for path in pages(site):
            found = overflow(page, f"{served.base}/rota/{path}")
            if found:
                problems[path or "index"] = found
    assert problems == {}


def test_a_page_wider_than_the_screen_fails_the_check(site: Path, served: Served) -> None:
    """The command-line page, broken in a copy: a code block that does not scroll, with a line
    some 3,000 pixels long, and a table that Material does not put in a scroller (it has a
    class); the original page passes."""
    broken = served.root / "broken"
    broken.mkdir()
    for entry in site.iterdir():
        if entry.name != "cli":
            (broken / entry.name).symlink_to(entry)
    html = (site / "cli" / "index.html").read_text()
    extra = (
        f'<pre style="overflow: visible">{"x" * 400}</pre>'
        f'<table class="plain"><tr><td>{"y" * 400}</td></tr></table>'
    )
    (broken / "cli").mkdir()
    (broken / "cli" / "index.html").write_text(html.replace("</article>", f"{extra}</article>"))

    with chromium_page(*WIDTHS["phone"]) as page:
        assert overflow(page, f"{served.base}/rota/cli/") == []
        found = overflow(page, f"{served.base}/broken/cli/")

    assert found[0].startswith("the page is "), found
    assert any(line.startswith('<pre> "xxxx') for line in found), found
    assert any(line.startswith("<table>") and "yyyy" in line for line in found), found


SCREENSHOTS = os.environ.get("ROTA_SCREENSHOTS")
SHOTS = {"home": ("", None), "cli": ("reference/cli/", "h2")}
"""Name: page, and the element to bring to the top (under the header) before the screenshot."""
TO_THE_TOP = """(element) => window.scrollTo(
  0, element.getBoundingClientRect().top + window.scrollY -
     document.querySelector(".md-header").offsetHeight)"""


@pytest.mark.skipif(not SCREENSHOTS, reason="set ROTA_SCREENSHOTS=<dir> to take screenshots")
def test_screenshots(served: Served) -> None:
    """Not a check: saves site-<page>-<width>.png of the home page and the command-line
    reference (from its first section, a table) to $ROTA_SCREENSHOTS."""
    assert SCREENSHOTS
    Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    for width, size in WIDTHS.items():
        with chromium_page(*size) as page:
            for name, (path, target) in SHOTS.items():
                page.goto(f"{served.base}/rota/{path}")
                if target is not None:
                    page.locator(target).first.evaluate(TO_THE_TOP)
                shot = f"{SCREENSHOTS}/site-{name}-{width}.png"
                page.screenshot(path=shot, animations="disabled")
