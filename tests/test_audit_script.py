"""scripts/audit.py: an advisory fails CI; an advisory database that answered for nothing is
reported as not audited, never as a pass."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).parent.parent / "scripts" / "audit.py"


def load_audit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rota_audit_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_pip_audit(tmp_path: Path, report: Mapping[str, object]) -> list[str]:
    """A command that prints ``report`` as pip-audit's JSON would, whatever it is asked."""
    script = tmp_path / "fake_pip_audit.py"
    script.write_text(f"print({json.dumps(json.dumps(report))})\n")
    return [sys.executable, str(script)]


def test_floors_are_the_lower_bounds_of_pyproject() -> None:
    pins = load_audit().floors()
    assert "starlette==1.3.0" in pins
    assert "jinja2==3.1.6" in pins
    assert not any(pin.startswith("rota==") for pin in pins)


def test_a_known_advisory_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = load_audit()
    vuln = {"id": "GHSA-xxxx", "fix_versions": ["9.9"]}
    report = {"dependencies": [{"name": "jinja2", "version": "3.1.0", "vulns": [vuln]}]}
    monkeypatch.setattr(audit, "PIP_AUDIT", fake_pip_audit(tmp_path, report))
    assert audit.main() == 1
    assert "jinja2 3.1.0: GHSA-xxxx (fixed in 9.9)" in capsys.readouterr().out


def test_an_unreachable_database_is_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = load_audit()
    skipped = {"name": "jinja2", "version": "3.1.6", "skip_reason": "not found on PyPI"}
    monkeypatch.setattr(audit, "PIP_AUDIT", fake_pip_audit(tmp_path, {"dependencies": [skipped]}))
    assert audit.main() == 0
    out = capsys.readouterr().out
    assert "NOT AUDITED" in out
    assert "none known" not in out
