"""Runs issue 21's failover topologies with the workload of ``workload.py``; one table.

A topology module listed in ``MODULES`` offers its scenarios in one of two shapes: ``RUNS``,
a mapping from a scenario's name to a function of ``workload.Settings`` returning its
``Outcome``; or ``SCENARIOS``, a mapping from a name to a function returning a context manager
that starts the topology, yields its ``workload.Topology`` and tears it all down when the block
ends (``galera_runs.py``'s records with a ``label`` and its ``measure`` are taken as they are).
A module's ``cleanup()`` ends what a run killed before its own clean-up left behind. A module
whose file is missing is skipped: a topology is added by writing its module and naming it here.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType

from outcome import Outcome
from table import markdown, render
from workload import HERE, Settings, Topology, run, settings_arguments, settings_from

MODULES = ("mariadb_replica", "postgres_standby", "galera_runs")
CLEANED_BY = (*MODULES, "galera")
Measure = Callable[[Settings], Outcome]


def modules(names: Sequence[str] = MODULES) -> list[ModuleType]:
    return [importlib.import_module(name) for name in names if (HERE / f"{name}.py").exists()]


def within(factory: Callable[[], AbstractContextManager[Topology]], settings: Settings) -> Outcome:
    with factory() as topology:
        return run(topology, settings)


def offered_by(module: ModuleType) -> dict[str, Measure]:
    runs = getattr(module, "RUNS", None)
    if isinstance(runs, Mapping):
        return dict(runs)
    offered = getattr(module, "SCENARIOS", None)
    if isinstance(offered, Mapping):
        return {name: functools.partial(within, factory) for name, factory in offered.items()}
    if offered is not None and hasattr(module, "measure"):
        return {slug(s.label): functools.partial(module.measure, s) for s in offered}
    print(f"note: {module.__name__}.py offers no scenarios yet; skipped", file=sys.stderr)
    return {}


def slug(label: str) -> str:
    return "galera-" + "-".join(re.findall(r"[a-z0-9]+", label.lower()))


def scenarios() -> dict[str, Measure]:
    return {name: measure for module in modules() for name, measure in offered_by(module).items()}


def other_runs() -> list[int]:
    """Pids of other ``main.py`` runs still going (their servers must be left alone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        script = any(part.endswith(b"scripts/ha/main.py") for part in command[:3])
        if script and b"--cleanup" not in command and b"--list" not in command:
            found.append(int(entry.name))
    return found


def cleanup() -> None:
    """What killed runs left, unless another run is going: its servers are not leftovers."""
    running = other_runs()
    if running:
        print(f"scripts/ha: runs {running} still going; nothing cleaned up", file=sys.stderr)
        return
    for module in modules(CLEANED_BY):
        clean = getattr(module, "cleanup", None)
        if callable(clean):
            clean()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="*", help="scenarios to run (default: every one)")
    parser.add_argument("--list", action="store_true", help="name the scenarios and stop")
    parser.add_argument("--cleanup", action="store_true", help="end what a killed run left")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--keep", action="store_true", help="keep each run's marks and logs")
    parser.add_argument(
        "--table", metavar="JSON", help="print the Markdown table of a --json file and stop"
    )
    settings_arguments(parser)
    options = parser.parse_args()
    if options.cleanup:
        cleanup()
        return 0
    if options.table:
        print(markdown([Outcome(**row) for row in json.loads(Path(options.table).read_text())]))
        return 0
    offered = scenarios()
    if options.list:
        print("\n".join(offered))
        return 0
    unknown = sorted(set(options.scenario) - set(offered))
    if unknown:
        parser.error(f"unknown scenarios {unknown}; --list names them")
    settings = settings_from(options)
    outcomes = []
    for name in options.scenario or offered:
        print(f"== {name}", file=sys.stderr, flush=True)
        try:
            outcomes.append(offered[name](settings))
        except Exception as error:  # a topology that would not start: a row saying so
            outcomes.append(Outcome(name, error=f"{type(error).__name__}: {error}"))
        print(render(outcomes[-1:]), file=sys.stderr, flush=True)
        if not options.keep and "directory" in outcomes[-1].details:
            shutil.rmtree(outcomes[-1].details["directory"], ignore_errors=True)
    print(render(outcomes))
    if options.markdown:
        print(markdown(outcomes))
    if options.json:
        Path(options.json).write_text(json.dumps([o.as_dict() for o in outcomes], indent=2))
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
