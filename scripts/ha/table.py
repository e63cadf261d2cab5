"""The table ``scripts/ha/run`` prints: one row per topology, the columns of issue 21."""

from __future__ import annotations

import io
from collections.abc import Sequence

from outcome import Outcome
from rich.console import Console
from rich.table import Table

COLUMNS = (
    "topology",
    "acknowledged",
    "succeeded",
    "lost",
    "duplicated",
    "double claims",
    "ticks exp/ran/dup",
    "resume (s)",
)


def cells(outcome: Outcome) -> list[str]:
    resume = "-" if outcome.resume_seconds is None else f"{outcome.resume_seconds:.1f}"
    ticks = f"{outcome.ticks_expected}/{outcome.ticks_ran}/{outcome.ticks_duplicated}"
    name = outcome.topology + (" (!)" if outcome.error else "")
    counts = (outcome.acknowledged, outcome.succeeded, outcome.lost, outcome.duplicated)
    double = outcome.details.get("double_claims", "-")
    return [name, *(f"{n:,}" for n in counts), str(double), ticks, resume]


def render(outcomes: Sequence[Outcome]) -> str:
    """The table as text (rich's box drawing), errors listed under it."""
    table = Table(*COLUMNS)
    for outcome in outcomes:
        table.add_row(*cells(outcome))
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(table)
    notes = [f"(!) {o.topology}: {o.error}" for o in outcomes if o.error]
    return "\n".join([console.export_text().rstrip(), *notes])


def markdown(outcomes: Sequence[Outcome]) -> str:
    """The same rows as a Markdown table, for the README."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(o)) + " |" for o in outcomes]
    return "\n".join(lines)
