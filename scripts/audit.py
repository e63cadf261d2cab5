"""Audit rota's dependencies for published advisories with pip-audit; CI runs it.

Two sets are audited: what is installed in ``.venv`` (what the tests ran against) and the floor
of every ``>=`` bound in ``pyproject.toml`` (the oldest release a user's resolver may pick), so a
floor that admits a vulnerable release fails CI as surely as an installed one.

A known advisory fails the run. A package the advisory database could not answer for is not a
pass: it is listed as not audited, and when the database answered for none (no network, or a
registry mirror without per-release metadata) the run says so plainly and exits 0, because
an unreachable database says nothing about the code.

    .venv/bin/python scripts/audit.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PIP_AUDIT = [sys.executable, "-m", "pip_audit"]
AUDIT_OPTIONS = ("--no-deps", "--disable-pip", "--format", "json", "--progress-spinner", "off")


def floors() -> list[str]:
    """``name==version`` for the lower bound of every dependency and extra in pyproject."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared.extend(extra)
    pins = set()
    for line in declared:
        requirement = Requirement(line)
        if requirement.name == project["name"]:
            continue
        for specifier in requirement.specifier:
            if specifier.operator == ">=":
                pins.add(f"{requirement.name}=={specifier.version}")
    return sorted(pins)


def installed() -> list[str]:
    """The pinned distributions of ``.venv``, rota itself (editable) left out."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [line for line in frozen.splitlines() if "==" in line]


def audit(name: str, pins: list[str]) -> tuple[list[str], list[str], int]:
    """The advisories found and the packages not audited among ``pins``, and how many."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
        requirements.write("\n".join(pins) + "\n")
        requirements.flush()
        result = subprocess.run(
            [*PIP_AUDIT, "-r", requirements.name, *AUDIT_OPTIONS],
            capture_output=True,
            text=True,
        )
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        sys.exit(f"error: pip-audit of the {name} set failed:\n{result.stderr.strip()}")
    found, skipped = [], []
    for dependency in report["dependencies"]:
        label = f"{dependency['name']} {dependency.get('version', '?')}"
        if "skip_reason" in dependency:
            skipped.append(label)
        for vuln in dependency.get("vulns", []):
            fixed = ", ".join(vuln.get("fix_versions", [])) or "no fix yet"
            found.append(f"{label}: {vuln['id']} (fixed in {fixed})")
    return found, skipped, len(report["dependencies"])


def main() -> int:
    failed = False
    for name, pins in (("installed", installed()), ("declared floors", floors())):
        found, skipped, total = audit(name, pins)
        audited = total - len(skipped)
        if found:
            failed = True
            print(f"dependency audit ({name}): {len(found)} known advisories")
            for line in found:
                print(f"  {line}")
        elif audited == 0:
            print(
                f"dependency audit ({name}): NOT AUDITED: the advisory database answered for "
                f"none of {total} packages (unreachable from here)"
            )
        else:
            print(f"dependency audit ({name}): {audited} of {total} packages audited, none known")
        if skipped and audited:
            print(f"  not audited: {', '.join(skipped)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
