"""tests/requirements.py: a test whose program, privilege or server is missing skips outside CI,
naming what is missing and how to get it, and fails with ``CI=true``; scripts/test learns from
it which Debian packages to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import requirements
from tests.browser import chromium_page
from tests.requirements import program, require, root, skipped_outside_ci

ROOT = Path(__file__).parent.parent
NEEDS_CHROMIUM = """
from tests.browser import chromium_page


def test_drives_chromium():
    with chromium_page():
        pass
"""


@pytest.fixture
def outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")


@pytest.fixture
def empty_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH on which no program is found."""
    monkeypatch.setenv("PATH", str(tmp_path))


@pytest.mark.usefixtures("empty_path", "outside_ci")
def test_a_missing_program_skips_naming_its_package() -> None:
    with pytest.raises(
        pytest.skip.Exception, match=r"^chromium not found: apt-get install chromium$"
    ):
        require(program("chromium"))


@pytest.mark.usefixtures("empty_path", "in_ci")
def test_in_ci_a_missing_program_fails() -> None:
    with pytest.raises(
        pytest.fail.Exception, match="fails instead of skipping: iptables not found"
    ):
        require(program("iptables"))


@pytest.mark.usefixtures("in_ci")
def test_nothing_missing_lets_the_test_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    python = Path(sys.executable)
    monkeypatch.setenv("PATH", str(python.parent))

    assert program(python.name, "python3") is None
    require(None, program(python.name, "python3"))


@pytest.mark.usefixtures("empty_path", "outside_ci")
def test_the_first_missing_need_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    with pytest.raises(pytest.skip.Exception, match=r"^a test host needs root: run the tests as"):
        require(None, root("a test host"), program("ip"))
    assert program("pg_createcluster", "postgresql-common") == (
        "pg_createcluster not found: apt-get install postgresql-common"
    )


def test_the_early_mark_skips_outside_ci_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert skipped_outside_ci(None, "x not found").args == (True,)
    assert skipped_outside_ci(None).args == (False,)
    monkeypatch.setenv("CI", "true")
    assert skipped_outside_ci("x not found").args == (False,)


def test_scripts_test_installs_the_packages_of_the_missing_programs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = {"ip", "iptables", "node"}
    monkeypatch.setattr(shutil, "which", lambda name: name if name in here else None)
    monkeypatch.setattr(requirements, "libfaketime", lambda: None)

    assert requirements.missing_packages() == ["chromium", "faketime"]
    here.update(("chromium", "faketime"))
    assert requirements.missing_packages() == ["faketime"]  # the program without its library


def test_scripts_test_reads_the_packages_from_the_module(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.requirements"],
        cwd=ROOT,
        env={"PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert done.stdout.split() == ["chromium", "faketime", "iproute2", "iptables", "nodejs"]


@pytest.mark.usefixtures("empty_path", "outside_ci")
def test_the_browser_skips_without_chromium() -> None:
    with pytest.raises(pytest.skip.Exception, match="chromium not found"), chromium_page():
        raise AssertionError("no page without a browser")


@pytest.mark.slow
@pytest.mark.parametrize(("ci", "outcome"), [("", "1 skipped"), ("true", "1 failed")])
def test_a_suite_run_without_chromium_on_path(tmp_path: Path, ci: str, outcome: str) -> None:
    """A real pytest run, with a PATH that lacks Chromium: the browser test skips, with its
    reason in the summary, or with ``CI=true`` fails."""
    (tmp_path / "test_needs_chromium.py").write_text(NEEDS_CHROMIUM)
    env = {"PATH": str(tmp_path), "CI": ci, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "pytest", "-rsf", "-p", "no:cacheprovider", "-p", "no:django"]
    done = subprocess.run(
        [*run, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )

    assert outcome in done.stdout, done.stdout + done.stderr
    assert "chromium not found: apt-get install chromium" in done.stdout
