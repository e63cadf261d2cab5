"""The reference pages (docs/reference/) each list one kind of name, all of it, and are the only
pages that list it: ``Rota``'s keywords and the ``ROTA_*`` variables, the commands and options
of ``rota``, the events, the error codes, the metrics and the HTTP API's routes.

Each list is read from the code (``Rota.__init__``, the click tree, the enums, the metric
registries, the route table) and compared with the page's table both ways: a name the code
gained and the page lacks, or one the page kept after the code dropped it, fails here. A table
of such names on any other page fails too: it would be a second copy, left to drift."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from prometheus_client.registry import Collector

import rota as package
from rota import EventName, Rota, errors
from rota.cli import main
from rota.cli.loading import Host
from rota.config import RotaConfig, Settings, environment_table
from rota.dashboard.api import TABLE
from rota.dashboard.api.openapi import document
from rota.dashboard.api.replies import MAX_BODY_BYTES, STATUS
from rota.dashboard.metrics import RotaCollector
from rota.environment import OTHER_VARIABLES, variable
from rota.errors import ErrorCode
from rota.observe.metrics import COUNTED, WorkerMetrics
from rota.observe.otel import Telemetry

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
PAGES = ("configuration", "cli", "events", "errors", "metrics", "http-api")
CONFIGURATION, CLI, EVENTS, ERRORS, METRICS, HTTP_API = (REFERENCE / f"{n}.md" for n in PAGES)
CLI_GUIDE = DOCS / "cli.md"
SOURCE = ROOT / "src" / "rota"

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
CELL_BORDER = re.compile(r"(?<!\\)\|")
CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(#([\w-]+)\)")
OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z-]*)")
VARIABLE = re.compile(r"ROTA_[A-Z0-9]+(?:_[A-Z0-9]+)*")
CONVERTER = re.compile(r":\w+\}")
LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


@dataclass(frozen=True)
class Table:
    """A Markdown table of a page, under its nearest heading."""

    heading: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def names(self, column: int = 0) -> list[str]:
        """The first backquoted text of each row's cell (rows without one left out)."""
        return [found[0] for row in self.rows if (found := CODE.findall(row[column]))]


def cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in CELL_BORDER.split(line.strip().strip("|")))


def tables(text: str) -> list[Table]:
    """Every table of ``text``, code blocks left out."""
    found: list[Table] = []
    heading = ""
    lines = FENCE.sub("", text).splitlines()
    for number, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        is_start = number + 1 < len(lines) and re.fullmatch(r"\|[\s|:-]+\|", lines[number + 1])
        if line.startswith("|") and is_start and not lines[number - 1].startswith("|"):
            rows = []
            for row in lines[number + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(cells(row))
            found.append(Table(heading, cells(line), tuple(rows)))
    return found


def table(page: Path, heading: str) -> Table:
    """The one table under ``heading`` on ``page``."""
    [found] = [item for item in tables(page.read_text()) if item.heading == heading]
    return found


def differences(listed: Iterable[object], in_code: Iterable[object]) -> dict[str, list[str]]:
    """What a page lacks and what it lists that the code has not, for a readable failure."""
    page, code = set(listed), set(in_code)
    return {"missing": sorted(map(str, code - page)), "stale": sorted(map(str, page - code))}


NO_DIFFERENCE: dict[str, list[str]] = {"missing": [], "stale": []}


def shown(default: object) -> str:
    """A default as the keywords' table writes it."""
    if isinstance(default, timedelta):
        return f"{default.days} days"
    return f'`"{default}"`' if isinstance(default, str) else f"`{default!r}`"


def test_the_keywords_are_those_of_rota_with_the_codes_defaults() -> None:
    keywords = table(CONFIGURATION, "Keywords of `Rota(...)`")
    listed = {CODE.findall(row[0])[0]: row[1] for row in keywords.rows}
    signature = inspect.signature(Rota.__init__).parameters.values()
    named = {p.name for p in signature if p.name != "self" and p.kind is not p.VAR_KEYWORD}
    settings = [item for item in fields(RotaConfig) if item.name != "url"]

    assert set(Settings.__optional_keys__) == {item.name for item in settings}
    assert differences(listed, named | set(Settings.__optional_keys__)) == NO_DIFFERENCE
    assert {item.name: listed[item.name] for item in settings} == {
        item.name: shown(item.default) for item in settings
    }


def test_the_settings_variables_are_the_table_the_code_makes() -> None:
    assert environment_table() in CONFIGURATION.read_text(), "paste rota.config.environment_table()"


def variables_in_code() -> set[str]:
    """Every ``ROTA_*`` variable rota reads: one per setting, and every string of the source
    that is a variable's name or names one as ``$ROTA_...`` (an error code aside)."""
    found = {variable(item.name) for item in fields(RotaConfig)} | set(OTHER_VARIABLES)
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if VARIABLE.fullmatch(node.value):
                    found.add(node.value)
                found.update(re.findall(rf"\$({VARIABLE.pattern})", node.value))
    return found - set(ErrorCode)


def test_every_variable_rota_reads_is_listed() -> None:
    found = [item for item in tables(CONFIGURATION.read_text()) if item.header[0] == "Variable"]
    listed = [name for item in found for name in item.names()]

    assert len(listed) == len(set(listed))
    assert differences(listed, variables_in_code()) == NO_DIFFERENCE


def commands(
    command: click.Command = main, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], click.Command]:
    """Every command of ``rota``, groups included, by its path (``("schedule", "edit")``)."""
    found = {path: command}
    for name, child in getattr(command, "commands", {}).items():
        found.update(commands(child, (*path, name)))
    return found


def usage(command: click.Command, path: tuple[str, ...], host: Host | None = None) -> str:
    context = click.Context(command, info_name=path[-1] if path else "rota", obj=host)
    return " ".join(["rota", *path, *command.collect_usage_pieces(context)])


def options(command: click.Command) -> dict[str, click.Option]:
    return {
        name: parameter
        for parameter in command.params
        if isinstance(parameter, click.Option)
        for name in (*parameter.opts, *parameter.secondary_opts)
    }


def command_sections() -> dict[tuple[str, ...], str]:
    """The text of each ``### `rota ...``` section of the reference, by command path."""
    parts = re.split(r"^(#{2,3} .*)$", CLI.read_text(), flags=re.MULTILINE)
    found = {}
    for heading, text in zip(parts[1::2], parts[2::2], strict=True):
        if match := re.fullmatch(r"### `rota((?: [a-z-]+)*)`", heading):
            found[tuple(match[1].split())] = text
    return found


def option_rows() -> dict[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """Per command, the row of the reference naming each of its options; a row linking to a
    group of shared options stands for the group's rows."""
    groups = {
        re.sub(r"\W+", "-", item.heading.lower()): item
        for item in tables(CLI.read_text())
        if item.heading.endswith(" options")
    }
    found: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
    for path, text in command_sections().items():
        rows = found.setdefault(path, {})
        for row in (row for item in tables(text) for row in item.rows):
            for anchor in LINK.findall(row[0]):
                rows.update(
                    (name, shared) for shared in groups[anchor].rows for name in flags(shared)
                )
            rows.update((name, row) for name in flags(row))
    return found


def flags(row: tuple[str, ...]) -> list[str]:
    return [found[1] for code in CODE.findall(row[0]) if (found := OPTION.match(code))]


def test_every_command_has_a_section_with_its_usage() -> None:
    sections = command_sections()

    assert differences(sections, commands()) == NO_DIFFERENCE
    for path, command in commands().items():
        synopsis = re.search(r"^```text\n(.*?)\n```", sections[path], re.MULTILINE | re.DOTALL)
        assert synopsis is not None and synopsis[1] == usage(command, path), path


def test_every_option_is_listed_with_its_default_and_choices() -> None:
    rows = option_rows()
    for path, command in commands().items():
        assert differences(rows[path], options(command)) == NO_DIFFERENCE, path
        for name, option in options(command).items():
            row = " | ".join(rows[path][name])
            default = option.default
            if isinstance(default, (int, float, str)) and not isinstance(default, bool):
                assert f"`{default}`" in rows[path][name][1], (path, name)
            if isinstance(option.type, click.Choice):
                assert all(str(choice) in row for choice in option.type.choices), (path, name)


def test_manage_py_rota_is_the_same_tree_without_app() -> None:
    host = Host(rota=lambda: Rota(), command=())
    for path, command in commands().items():
        assert usage(command, path, host) == usage(command, path).replace(" [APP]", ""), path


def test_the_command_line_pages_name_no_option_that_rota_lacks() -> None:
    known = {name for command in commands().values() for name in options(command)}
    for page in (CLI, CLI_GUIDE):
        named = {word for word in OPTION.findall(page.read_text()) if word.startswith("--")}
        assert named - known - {"--help"} == set(), page.name


def test_the_events_page_lists_every_event_in_the_enums_order() -> None:
    events = table(EVENTS, "Events")

    assert events.names() == [name.value for name in EventName]
    assert {row[1] for row in events.rows} <= LEVELS
    assert all(logger.startswith("rota") for logger in events.names(2))


def error_classes() -> list[type[errors.RotaError]]:
    found = vars(errors).values()
    return [item for item in found if isinstance(item, type) and issubclass(item, errors.RotaError)]


def test_the_errors_page_lists_every_code_with_the_class_that_carries_it() -> None:
    codes = table(ERRORS, "Codes")
    carriers: dict[str, str] = {error.code: error.__name__ for error in error_classes()}

    assert len(codes.names()) == len(set(codes.names()))
    assert differences(codes.names(), ErrorCode) == NO_DIFFERENCE
    for row in codes.rows:
        code, carrier = CODE.findall(row[0])[0], (CODE.findall(row[1]) or [row[1]])[0]
        assert carrier == carriers.get(code, "none"), code


def test_the_errors_page_shows_every_class() -> None:
    members = re.findall(r"^ {8}- (\w+)$", ERRORS.read_text(), re.MULTILINE)

    assert members == ["ErrorCode", *(error.__name__ for error in error_classes())]
    assert set(members) <= set(package.__all__)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Rota]:
    made = Rota(f"sqlite:///{tmp_path}/rota.db")
    yield made
    made.close()


def families(collector: Collector) -> set[tuple[str, str, frozenset[str]]]:
    """Each metric's exposed name, type and labels, from the samples ``collector`` gives."""
    found = set()
    for family in collector.collect():
        labels = {label for sample in family.samples for label in sample.labels} - {"le"}
        name = f"{family.name}_total" if family.type == "counter" else family.name
        found.add((name, family.type, frozenset(labels)))
    return found


def listed_metrics(heading: str) -> set[tuple[str, str, frozenset[str]]]:
    metrics = table(METRICS, heading)
    return {(row[0].strip("`"), row[1], frozenset(CODE.findall(row[2]))) for row in metrics.rows}


def test_the_worker_metrics_are_those_of_its_registry(app: Rota) -> None:
    @app.task
    def nightly() -> None: ...

    job = app.job(app.queue(nightly))
    metrics = WorkerMetrics()
    now = datetime.now(timezone.utc)
    metrics.started(job, now)
    metrics.ran(job, 0.25)
    for event in COUNTED:
        metrics.outcome(event, replace(job, schedule="nightly"), now)

    assert families(metrics.registry) == listed_metrics("Worker metrics")


def test_the_dashboard_metrics_are_those_its_collector_gives(app: Rota) -> None:
    app.queue("elsewhere", queue="mail")

    assert families(RotaCollector(app)) == listed_metrics("Dashboard metrics")


class Meter:
    """A meter provider and meter that only records the instruments rota makes."""

    def __init__(self) -> None:
        self.made: set[tuple[str, str, str]] = set()

    def get_meter(self, *args: Any, **kwargs: Any) -> Meter:
        return self

    def create_counter(self, name: str, unit: str = "", description: str = "") -> None:
        self.made.add((name, "counter", unit))

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> None:
        self.made.add((name, "histogram", unit))


def test_the_opentelemetry_instruments_are_those_rota_makes() -> None:
    meter = Meter()
    Telemetry(meter_provider=meter)
    instruments = table(METRICS, "OpenTelemetry metrics")

    listed = {(row[0].strip("`"), row[1], row[2].strip("`")) for row in instruments.rows}
    assert differences(listed, meter.made) == NO_DIFFERENCE


def test_the_api_page_lists_every_route_with_its_scope() -> None:
    routes = table(HTTP_API, "Routes")
    listed = {(row[0].strip("`"), row[1].strip("`"), row[2]) for row in routes.rows}
    in_code = {
        (method, CONVERTER.sub("}", path), access.value) for method, path, access, _ in TABLE
    }
    described = {
        (method.upper(), path, scope[1] if scope else "none")
        for path, operations in document("/api")["paths"].items()
        for method, operation in operations.items()
        for scope in [re.search(r"Scope: `(\w+)`", operation.get("description", ""))]
    }

    assert differences(listed, in_code | {("GET", "/openapi.json", "none")}) == NO_DIFFERENCE
    assert described == listed


def test_the_api_page_gives_each_error_code_its_status() -> None:
    statuses = table(HTTP_API, "Errors")
    codes = [(code, int(row[0])) for row in statuses.rows for code in CODE.findall(row[1])]
    listed = {code: status for code, status in codes if re.fullmatch(r"[A-Z_]+", code)}

    assert listed == {str(code): status for code, status in STATUS.items()}
    assert f"{MAX_BODY_BYTES // 2**20} MiB" in HTTP_API.read_text()


def kinds() -> dict[str, set[str]]:
    """The names of each kind (the tests above check that their pages list them all)."""
    routes = table(HTTP_API, "Routes")
    return {
        "keywords": set(table(CONFIGURATION, "Keywords of `Rota(...)`").names()),
        "variables": variables_in_code(),
        "options": {name for rows in option_rows().values() for name in rows},
        "events": {name.value for name in EventName},
        "error codes": set(ErrorCode),
        "metrics": {name for item in tables(METRICS.read_text()) for name in item.names()},
        "routes": {f"{row[0]} {row[1]}".replace("`", "") for row in routes.rows},
    }


def test_each_list_lives_on_its_reference_page_only() -> None:
    headers = {item.header for page in REFERENCE.glob("*.md") for item in tables(page.read_text())}
    named = kinds()
    copies = []
    for page in sorted(set(DOCS.rglob("*.md")) - set(REFERENCE.glob("*.md"))):
        for item in tables(page.read_text()):
            first = {word for name in item.names() for word in (name, name.split()[0])}
            found = [kind for kind, names in named.items() if len(first & names) >= 3]
            if found or item.header in headers:
                what = f"a table of {found[0]}" if found else "a reference page's table"
                copies.append(f"{page.relative_to(ROOT)}, '{item.heading}': {what}")
    assert copies == [], "link to the reference page instead"
