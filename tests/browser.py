"""Headless Chromium for the tests that use a real browser (the dashboard, the Django example,
the documentation site): Debian's ``chromium`` from PATH, driven by the ``playwright`` package,
which downloads no browser of its own. Without either a test skips, or fails with ``CI=true``
(``tests.requirements``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.requirements import module, program, require

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def missing() -> str | None:
    """What a browser test lacks (``None``: nothing)."""
    return program("chromium") or module("playwright")


@contextmanager
def chromium_page(width: int = 1280, height: int = 800, mobile: bool = False) -> Iterator[Any]:
    """A fresh page of headless Chromium, ``width`` by ``height`` CSS pixels; ``mobile``: as a
    phone's browser shows it (the page's viewport meta tag applies, touch, overlay scrollbars)."""
    require(missing())
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(
                viewport={"width": width, "height": height}, is_mobile=mobile, has_touch=mobile
            )
            page.set_default_timeout(10_000)
            yield page
        finally:
            browser.close()
