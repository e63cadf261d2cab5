"""What some tests need of the machine besides Python packages: Debian programs, root, database
servers. One rule for all of them: outside CI a test whose need is missing skips, its reason
naming what is missing and how to get it; with ``CI=true`` it fails, since CI installs and
starts everything (``.ci/run``) and a skip there would hide a test that never ran.

``scripts/test`` installs the missing programs that ``INSTALLABLE`` names when it runs as root
with apt-get (``python -m tests.requirements`` prints their packages), so that on such a machine
only a database server that is not running, or a user who is not root, makes a test skip.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import sys

import pytest

INSTALLABLE = {
    "chromium": "chromium",
    "faketime": "faketime",
    "iptables": "iptables",
    "ip": "iproute2",
    "node": "nodejs",
}
"""Program: Debian package, for the programs ``scripts/test`` may install (the database servers'
own tools come with the servers, which it leaves to whoever runs them)."""


def in_ci() -> bool:
    """Whether this is a CI run, where nothing a test needs may be missing."""
    return os.environ.get("CI") == "true"


def program(name: str, package: str | None = None) -> str | None:
    """What is missing when ``name`` is not on PATH (``None``: nothing), and the Debian
    ``package`` that has it (by default ``INSTALLABLE``'s)."""
    if shutil.which(name) is not None:
        return None
    return f"{name} not found: apt-get install {package or INSTALLABLE[name]}"


def libfaketime() -> str | None:
    """The path of libfaketime (Debian's ``faketime`` package), or ``None``."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else None


def faketime() -> str | None:
    """What is missing for a process run under libfaketime (``None``: nothing)."""
    if libfaketime() is None:
        return "libfaketime not found: apt-get install faketime"
    return program("faketime")


def root(what: str) -> str | None:
    """What is missing when ``what`` needs root and this process is not (``None``: it is)."""
    if os.geteuid() == 0:
        return None
    return f"{what} needs root: run the tests as root (sudo scripts/test)"


def module(name: str, install: str = "scripts/bootstrap dev") -> str | None:
    """What is missing when the Python module ``name`` cannot be imported, and how to get it."""
    try:
        found = importlib.util.find_spec(name) is not None
    except ImportError:  # its parent package is missing
        found = False
    return None if found else f"the {name} module not found: {install}"


def require(*problems: str | None) -> None:
    """Go on when every problem is ``None``; else skip the test (or the module, called at its
    top) for the first one, or with ``CI=true`` fail it."""
    __tracebackhide__ = True  # a skip or failure is reported where the test called this
    problem = next((p for p in problems if p is not None), None)
    if problem is None:
        return
    if in_ci():
        pytest.fail(f"CI=true, so this fails instead of skipping: {problem}", pytrace=False)
    pytest.skip(problem, allow_module_level=True)


def skipped_outside_ci(*problems: str | None) -> pytest.MarkDecorator:
    """A mark that skips a module's or a test's setup early for a missing need, outside CI;
    in CI it skips nothing, and the test's own ``require`` fails it."""
    problem = next((p for p in problems if p is not None), None)
    return pytest.mark.skipif(problem is not None and not in_ci(), reason=problem or "")


def missing_packages() -> list[str]:
    """The Debian packages of ``INSTALLABLE`` whose programs are not on PATH."""
    missing = {package for name, package in INSTALLABLE.items() if program(name) is not None}
    if faketime() is not None:
        missing.add("faketime")
    return sorted(missing)


if __name__ == "__main__":
    sys.stdout.write(" ".join(missing_packages()) + "\n")
