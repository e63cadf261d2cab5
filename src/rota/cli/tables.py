"""Tables that fit the terminal without cutting what must be read whole.

A column says how it may give way when the terminal is narrow: not at all (ids, states, times,
counts, codes, cron rules, zones: a timestamp cut in two is misread), by truncation with an
ellipsis (names: the start of a name is what tells it apart, and ``rota job`` or ``--json`` show
it in full), by wrapping at spaces (prose), or by wrapping anywhere (a message, read in full
elsewhere). When the columns do not fit side by side, a column may move beneath another, in the
same cell (a zone beneath its cron rule): the row grows taller rather than losing what an
operator reads first. When even that is too wide, the least important columns are left out, and
a line under the table says which. Piped output has no width limit (see ``render``), so scripts
always get every column in full, side by side.

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
    """How a column's cells give way: not at all, cut with an ellipsis, wrapped at spaces, or
    wrapped anywhere (``PROSE``: as narrow as a name may be, a long word folded)."""

    WHOLE = "whole"
    NAME = "name"
    WORDS = "words"
    PROSE = "prose"


WHOLE, NAME, WORDS, PROSE = Fit.WHOLE, Fit.NAME, Fit.WORDS, Fit.PROSE


@dataclass(frozen=True)
class Column:
    """``drop``: 0 for a column always shown; higher numbers are left out first. ``under``: the
    header of the column this one moves beneath when they do not fit side by side (it is then
    left out with that column). ``joiner``: between a list's items on one line."""

    header: str
    fit: Fit = WHOLE
    drop: int = 0
    under: str | None = None
    joiner: str = ", "


Stack = tuple[int, ...]


class Grid:
    """A table laid out for the width it is printed at. A cell is text, or a list of items
    (joined with commas when there is room, one a line when there is not), shown escaped."""

    def __init__(self, *columns: Column | str) -> None:
        self.columns = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.rows: list[tuple[Cell, ...]] = []

    def add_row(self, *cells: Cell) -> None:
        self.rows.append(tuple(escaped(cell) for cell in cells))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        stacks = self.stacked(options.max_width)
        widths = layout(
            [self.columns[stack[0]].drop for stack in stacks],
            [self.natural(stack) for stack in stacks],
            [self.narrowest(stack) for stack in stacks],
            options.max_width,
        )
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            header_style="bold",
        )
        shown = [(stack, width) for stack, width in zip(stacks, widths, strict=True) if width]
        for stack, width in shown:
            table.add_column(
                "\n".join(self.columns[i].header for i in stack),
                width=width,
                no_wrap=all(self.columns[i].fit not in (WORDS, PROSE) for i in stack),
                overflow="fold",
            )
        for row in self.rows:
            table.add_row(*(Text(self.cell(row, stack, width)) for stack, width in shown))
        yield table
        hidden = [
            self.columns[i].header
            for stack, width in zip(stacks, widths, strict=True)
            if width is None
            for i in stack
        ]
        if hidden:
            yield Text(f"({', '.join(hidden)} not shown for lack of width; --json shows all)")

    def stacked(self, width: int) -> list[Stack]:
        """Side by side when every column fits at its narrowest; else one column after another,
        the last first, moves beneath the one it names in ``under``, until they do."""
        stacks: list[Stack] = [(i,) for i in range(len(self.columns))]
        for i, column in reversed(list(enumerate(self.columns))):
            least = [self.narrowest(stack) for stack in stacks]
            if sum(least) + GAP * (len(stacks) - 1) <= width:
                break
            if column.under is not None:
                host = next(s for s in stacks if self.columns[s[0]].header == column.under)
                stacks = [(*s, i) if s == host else s for s in stacks if s != (i,)]
        return [tuple(sorted(stack)) for stack in stacks]

    def natural(self, stack: Stack) -> int:
        return max(
            cell_len(text)
            for i in stack
            for column in [self.columns[i]]
            for text in [column.header, *(joined(column, row[i]) for row in self.rows)]
        )

    def narrowest(self, stack: Stack) -> int:
        return max(narrowest(self.columns[i], [row[i] for row in self.rows]) for i in stack)

    def cell(self, row: Sequence[Cell], stack: Stack, width: int) -> str:
        """The stack's cells one under the other, an empty last one leaving no blank line."""
        shown = [fitted(self.columns[i], row[i], width) for i in stack]
        while len(shown) > 1 and not shown[-1]:
            shown.pop()
        return "\n".join(shown)


def layout(
    drops: Sequence[int], natural: Sequence[int], least: Sequence[int], width: int
) -> list[int | None]:
    """Each column's width, ``None`` for one left out: the natural widths when they fit; else
    the columns that may give way shrink, the widest first, and the least important go."""
    shown = list(range(len(drops)))

    def total(widths: Sequence[int]) -> int:
        return sum(widths) + GAP * (len(widths) - 1)

    while total([least[i] for i in shown]) > width:
        droppable = [i for i in shown if drops[i]]
        if not droppable:
            break
        shown.remove(max(reversed(droppable), key=lambda i: drops[i]))
    widths = {i: natural[i] for i in shown}
    excess = total(list(widths.values())) - width
    while excess > 0:
        shrinkable = [i for i in shown if widths[i] > least[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return [widths.get(i) for i in range(len(drops))]


def narrowest(column: Column, cells: Sequence[Cell]) -> int:
    header = cell_len(column.header)
    items = [item for cell in cells for item in parts(cell)]
    if column.fit is WORDS:
        return max([header, *(cell_len(word) for item in items for word in item.split())])
    longest = max([header, *(cell_len(item) for item in items)])
    return min(longest, max(header, NAME_MIN)) if column.fit in (NAME, PROSE) else longest


def fitted(column: Column, cell: Cell, width: int) -> str:
    """A cell's lines for a column ``width`` wide; a name too long cut with an ellipsis."""
    text = lines(column, cell, width)
    if column.fit is not NAME:
        return text
    cut = []
    for line in text.split("\n"):
        shown = Text(line)
        shown.truncate(width, overflow="ellipsis")
        cut.append(shown.plain)
    return "\n".join(cut)


def escaped(cell: Cell) -> Cell:
    return visible(cell) if isinstance(cell, str) else [visible(item) for item in cell]


def parts(cell: Cell) -> Sequence[str]:
    return [cell] if isinstance(cell, str) else cell


def joined(column: Column, cell: Cell) -> str:
    return column.joiner.join(parts(cell))


def lines(column: Column, cell: Cell, width: int) -> str:
    """A list's items packed into lines of ``width``, whole, never split between two lines."""
    if isinstance(cell, str):
        return cell
    packed: list[str] = []
    for item in cell:
        if packed and cell_len(packed[-1] + column.joiner + item) <= width:
            packed[-1] += column.joiner + item
        else:
            packed.append(item)
    return "\n".join(packed)
