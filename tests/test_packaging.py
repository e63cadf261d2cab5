"""The release's metadata agrees with itself: one version, a changelog entry, every Python named.

scripts/check-package builds and installs the real artefacts; these are the quick checks of the
facts a release could get wrong without any build failing.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rota
from rota.cli import main

ROOT = Path(__file__).resolve().parent.parent
NEWEST_PYTHON = (3, 13)


def pyproject() -> dict[str, Any]:
    toml = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    with (ROOT / "pyproject.toml").open("rb") as file:
        loaded: dict[str, Any] = toml.load(file)
    return loaded


def test_the_installed_version_is_rota_dunder_version() -> None:
    assert importlib.metadata.version("rota") == rota.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", rota.__version__), rota.__version__


def test_rota_version_reports_it() -> None:
    result = CliRunner().invoke(main, ["--version"], prog_name="rota")
    assert result.exit_code == 0, result.output
    assert result.output == f"rota, version {rota.__version__}\n"


def test_the_version_is_read_from_rota_dunder_version_alone() -> None:
    loaded = pyproject()
    assert "version" not in loaded["project"]
    assert "version" in loaded["project"]["dynamic"]
    assert loaded["tool"]["hatch"]["version"] == {"path": "src/rota/__init__.py"}


def test_the_changelog_has_a_section_for_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = rf"^## \[{re.escape(rota.__version__)}\] - (Unreleased|\d{{4}}-\d{{2}}-\d{{2}})$"
    assert re.search(heading, changelog, re.MULTILINE), f"no '## [{rota.__version__}] - ...'"


def test_the_classifiers_name_every_supported_python() -> None:
    project = pyproject()["project"]
    floor = re.fullmatch(r">=\s*3\.(\d+)", project["requires-python"])
    assert floor, project["requires-python"]
    supported = {f"3.{minor}" for minor in range(int(floor[1]), NEWEST_PYTHON[1] + 1)}
    prefix = "Programming Language :: Python :: "
    named = {c.removeprefix(prefix) for c in project["classifiers"] if c.startswith(prefix + "3.")}
    assert named == supported
