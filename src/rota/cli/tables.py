"""Tables that fit the terminal without cutting what must be read whole.

A column says how it may give way when the terminal is narrow: not at all (ids, states, times,
counts: a timestamp cut in two is misread), by truncation with an ellipsis (names: the start of
a name is what tells it apart, and ``rota job`` or ``--json`` show it in full), or by wrapping
at spaces (prose, cron fields). When even the narrowest such layout is too wide, the least
important columns are left out, and a line under the table says which. Piped output has no
width limit (see ``render``), so scripts always get every column in full.

Cells hold stored text (names, error codes, hosts written by whoever reached the database): each
is escaped as it is added (``rota.core.escaping``) and printed as plain ``Text``, never read as
rich markup, so no cell can move the cursor, recolour the terminal, reorder what is around it or
style itself with ``[bold]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from rota.core.escaping import visible

GAP = 2
NAME_MIN = 12
Cell = str | Sequence[str]


class Fit(Enum):
    """How a column's cells give way: not at all, cut with an ellipsis, wrapped at spaces."""

    WHOLE = "whole"
    NAME = "name"
    WORDS = "words"


WHOLE, NAME, WORDS = Fit.WHOLE, Fit.NAME, Fit.WORDS


@dataclass(frozen=True)
class Column:
    """``drop``: 0 for a column always shown; higher numbers are left out first."""

    header: str
    fit: Fit = WHOLE
    drop: int = 0


class Grid:
    """A table laid out for the width it is printed at. A cell is text, or a list of items
    (joined with commas when there is room, one a line when there is not), shown escaped."""

    def __init__(self, *columns: Column | str) -> None:
        self.columns = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.rows: list[tuple[Cell, ...]] = []

    def add_row(self, *cells: Cell) -> None:
        self.rows.append(tuple(escaped(cell) for cell in cells))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = layout(self.columns, self.rows, options.max_width)
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            header_style="bold",
        )
        shown = [i for i, width in enumerate(widths) if width is not None]
        for i in shown:
            column = self.columns[i]
            table.add_column(
                column.header,
                width=widths[i],
                no_wrap=column.fit is not WORDS,
                overflow="ellipsis" if column.fit is NAME else "fold",
            )
        for row in self.rows:
            table.add_row(*(Text(lines(row[i], widths[i] or 0)) for i in shown))
        yield table
        hidden = [
            column.header
            for column, width in zip(self.columns, widths, strict=True)
            if width is None
        ]
        if hidden:
            yield Text(f"({', '.join(hidden)} not shown for lack of width; --json shows all)")


def layout(
    columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int
) -> list[int | None]:
    """Each column's width, ``None`` for one left out: the natural widths when they fit; else
    the columns that may give way shrink, the widest first, and the least important go."""
    natural = [
        max([cell_len(column.header), *(cell_len(joined(row[i])) for row in rows)])
        for i, column in enumerate(columns)
    ]
    least = [narrowest(column, [row[i] for row in rows]) for i, column in enumerate(columns)]
    shown = list(range(len(columns)))

    def total(widths: Sequence[int]) -> int:
        return sum(widths) + GAP * (len(widths) - 1)

    while total([least[i] for i in shown]) > width:
        droppable = [i for i in shown if columns[i].drop]
        if not droppable:
            break
        shown.remove(max(reversed(droppable), key=lambda i: columns[i].drop))
    widths = {i: natural[i] for i in shown}
    excess = total(list(widths.values())) - width
    while excess > 0:
        shrinkable = [i for i in shown if widths[i] > least[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return [widths.get(i) for i in range(len(columns))]


def narrowest(column: Column, cells: Sequence[Cell]) -> int:
    header = cell_len(column.header)
    items = [item for cell in cells for item in parts(cell)]
    if column.fit is WORDS:
        return max([header, *(cell_len(word) for item in items for word in item.split())])
    longest = max([header, *(cell_len(item) for item in items)])
    return min(longest, max(header, NAME_MIN)) if column.fit is NAME else longest


def escaped(cell: Cell) -> Cell:
    return visible(cell) if isinstance(cell, str) else [visible(item) for item in cell]


def parts(cell: Cell) -> Sequence[str]:
    return [cell] if isinstance(cell, str) else cell


def joined(cell: Cell) -> str:
    return ", ".join(parts(cell))


def lines(cell: Cell, width: int) -> str:
    """A list's items packed into lines of ``width``, whole, never split between two lines."""
    if isinstance(cell, str):
        return cell
    packed: list[str] = []
    for item in cell:
        if packed and cell_len(packed[-1]) + 2 + cell_len(item) <= width:
            packed[-1] += ", " + item
        else:
            packed.append(item)
    return "\n".join(packed)
