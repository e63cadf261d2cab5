"""The documentation site: ``mkdocs build --strict`` passes on the real pages and fails on a broken
``::: reference`` or link, so CI catches a renamed API the pages still name; the docstring
extension turns rota's ReST-ish examples into Markdown code.

Skipped where the ``docs`` extra is not installed (the other Python versions' venvs)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

if sys.version_info < (3, 11):
    pytest.skip("the docs extra is for Python 3.11 and later", allow_module_level=True)
pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")
pytest.importorskip("material")

ROOT = Path(__file__).parent.parent


def load_extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "rota_rest_docstrings", ROOT / "docs" / "rest_docstrings.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_site_source(target: Path) -> Path:
    """A copy of mkdocs.yml and docs/ in ``target`` that a test may break, reading the real
    src/ and the examples/ its pages include; ``target``."""
    shutil.copy(ROOT / "mkdocs.yml", target / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", target / "docs")
    for tree in ("src", "examples"):
        (target / tree).symlink_to(ROOT / tree, target_is_directory=True)
    return target


@pytest.fixture
def site_source(tmp_path: Path) -> Path:
    return copy_site_source(tmp_path)


def build(source: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(source / "site")],
        cwd=source,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=100,
    )


@pytest.mark.slow
def test_the_site_builds_strictly_with_the_api_reference(site_source: Path) -> None:
    built = build(site_source)

    assert built.returncode == 0, built.stderr
    reference = (site_source / "site" / "reference" / "rota" / "index.html").read_text()
    assert 'id="rota.Rota.queue"' in reference
    # Rota's ">>>" example is code, not three nested quotes.
    assert 'class="language-pycon highlight"' in reference
    assert "<blockquote>" not in reference
    errors = (site_source / "site" / "reference" / "errors" / "index.html").read_text()
    assert 'id="rota.errors.TransientStoreError"' in errors
    assert (site_source / "site" / "screenshots" / "overview.png").is_file()
    # A page's included example is there, not the inclusion's marker (which a formatter of
    # Markdown's Python blocks once turned into "--8 < --", leaving the page without its code).
    workflows = (site_source / "site" / "workflows" / "index.html").read_text()
    assert "charge_card" in workflows and "--8" not in workflows


@pytest.mark.slow
def test_a_reference_to_a_missing_object_fails_the_build(site_source: Path) -> None:
    page = site_source / "docs" / "reference" / "errors.md"
    page.write_text(page.read_text() + "\n::: rota.no_such_thing\n")

    built = build(site_source)

    assert built.returncode != 0
    assert "rota.no_such_thing" in built.stderr


@pytest.mark.slow
def test_a_broken_link_or_anchor_fails_the_build(site_source: Path) -> None:
    page = site_source / "docs" / "tutorial.md"
    page.write_text(page.read_text() + "\nSee [nowhere](concepts.md#no-such-section).\n")

    built = build(site_source)

    assert built.returncode != 0
    assert "#no-such-section" in built.stderr


def test_doctest_runs_become_pycon_fences() -> None:
    text = "Do it.\n\n>>> rota = Rota()\n>>> @rota.task\n... def f(): ...\n\nThen more."

    assert load_extension().convert(text) == (
        "Do it.\n\n```pycon\n>>> rota = Rota()\n>>> @rota.task\n... def f(): ...\n```\n\nThen more."
    )


def test_literal_blocks_become_fences_in_their_language() -> None:
    convert = load_extension().convert

    assert convert("Set it::\n\n    ROTA = {'A': 1}\n\nDone.") == (
        "Set it:\n\n```python\nROTA = {'A': 1}\n```\n\nDone."
    )
    assert convert("::\n\n    RotaError\n    └── StoreError\n") == (
        "\n```text\nRotaError\n└── StoreError\n```"
    )


def test_definition_lists_take_markdowns_form() -> None:
    text = "Fixtures:\n\n``a``\n    The first,\n    on two lines.\n``b``\n    The second."

    assert load_extension().convert(text) == (
        "Fixtures:\n\n\n``a``\n:   The first,\n    on two lines.\n\n``b``\n:   The second."
    )


def test_prose_and_lists_are_left_as_they_are() -> None:
    text = "A line,\nand another.\n\n- an item that\n  wraps\n- another\n\n1. first,\n   wrapped"

    assert load_extension().convert(text) == text
