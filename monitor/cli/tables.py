"""Printing a table so that no word is cut: every command's tables go through `print_table`.

Rich lays a table out by shrinking its widest columns (or, for ratio columns, by the ratios alone) and folds what
no longer fits, so at 80 or 100 columns a tier, model or series name is cut mid-word ('llama-3-3-70b-ins' /
'truct-fp8'). Here each column gets at least its longest word, and the space left goes by the ratios (prose) or
to unwrapping cells; where even the longest words do not fit side by side, the rows are
printed as keyed lines instead: the first cell as a heading, every other cell under it as 'header: text'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

__all__ = ["column_widths", "print_table"]

# Lines under a keyed row are indented this far; the row's heading sits at half of it.
_INDENT = 4


def print_table(console: Console, table: Table) -> None:
    """`table` at the console's width with every word whole, or its rows as keyed lines where it cannot be."""
    widths = column_widths(console, table)
    if widths is None:
        _print_keyed(console, table)
        return
    for column, width in zip(table.columns, widths, strict=True):
        column.width, column.ratio = width, None  # fixed: Rich's own layout would shrink them below a word
    table.expand = False  # the widths above already fill the console where the table was to expand
    console.print(table)


def column_widths(console: Console, table: Table) -> list[int] | None:
    """Content widths (padding excluded) giving every column at least its longest word, or None when the console
    is too narrow for that. A table of prose with ratios (and expanding) shares the space over the minimum by
    its ratios; any other table first unwraps its cells, the columns that need the least first (so most rows
    stay on one line), then its headers, and an expanding table spreads what is left evenly."""
    pads = [_padding(table, i) for i in range(len(table.columns))]
    sizes = [_measure(console, table, column) for column in table.columns]
    lows = [s.low for s in sizes]
    room = console.width - _borders(table) - sum(pads)
    if sum(lows) > room:
        return None
    ratios = [c.ratio or 0 for c in table.columns]
    if any(ratios) and table.expand:
        return _by_weight(lows, room - sum(lows), ratios)
    widths = list(lows)
    spare = room - sum(lows)
    for goal in ([s.body for s in sizes], [s.whole for s in sizes]):
        for i in sorted(range(len(widths)), key=lambda i: goal[i] - widths[i]):
            add = min(max(0, goal[i] - widths[i]), spare)
            widths[i] += add
            spare -= add
    return _by_weight(widths, spare, [1] * len(widths)) if table.expand else widths


def _by_weight(lows: list[int], extra: int, weights: Sequence[float]) -> list[int]:
    """`lows` plus `extra` shared in proportion to `weights`, by largest remainder."""
    total = sum(weights)
    if extra <= 0 or total <= 0:
        return list(lows)
    shares = [extra * w / total for w in weights]
    widths = [lo + int(share) for lo, share in zip(lows, shares, strict=True)]
    left = extra - sum(int(share) for share in shares)
    for i in sorted(range(len(widths)), key=lambda i: shares[i] - int(shares[i]), reverse=True)[:left]:
        widths[i] += 1
    return widths


@dataclass(frozen=True)
class _Size:
    low: int  # the longest word (the whole widest cell where the column may not wrap)
    body: int  # the widest data cell on one line
    whole: int  # the same with the header on one line too


def _measure(console: Console, table: Table, column: Column) -> _Size:
    if column.width is not None:
        return _Size(column.width, column.width, column.width)

    def widths(cells: Sequence[RenderableType]) -> list[Measurement]:
        return [Measurement.get(console, console.options, _text(console, c)) for c in cells]

    body = widths(list(column.cells))
    head = widths([column.header]) if table.show_header else []
    low = max((m.maximum if column.no_wrap else m.minimum for m in [*body, *head]), default=1)
    low = max(low, column.min_width or 0, 1)
    widest = max((m.maximum for m in body), default=1)
    return _Size(low, max(low, widest), max(low, widest, *(m.maximum for m in head)))


def _padding(table: Table, index: int) -> int:
    """The padding Rich adds to a column's content (as `Table` computes it)."""
    _, right, _, left = table.padding
    if table.collapse_padding:
        left, right = 0, abs(left - right)
    if not table.pad_edge:
        left = 0 if index == 0 else left
        right = 0 if index == len(table.columns) - 1 else right
    return left + right


def _borders(table: Table) -> int:
    if not table.box:
        return 0
    return len(table.columns) - 1 + (2 if table.show_edge else 0)


def _text(console: Console, cell: RenderableType) -> RenderableType:
    return console.render_str(cell) if isinstance(cell, str) else cell


def _plain(console: Console, cell: RenderableType) -> Text:
    if isinstance(cell, Text):
        return cell
    return console.render_str(cell) if isinstance(cell, str) else Text(str(cell))


def _print_keyed(console: Console, table: Table) -> None:
    """The rows as keyed lines: the first cell as a heading, then 'header: text' for every other non-empty cell
    (a row with an empty first cell continues the row above it), each wrapped at the console's width."""
    if table.title:
        console.print(_plain(console, table.title), style="italic")
    headers = [_plain(console, c.header).plain for c in table.columns]
    rows = zip(*(list(c.cells) for c in table.columns), strict=True)
    for first, *rest in rows:
        heading = _plain(console, first)
        if heading.plain.strip():
            console.print(Padding(Text.assemble(heading, style="bold"), (0, 0, 0, _INDENT // 2)))
        for header, cell in zip(headers[1:], rest, strict=True):
            text = _plain(console, cell)
            if text.plain.strip():
                key = f"{header}: " if header and table.show_header else ""
                console.print(Padding(Text.assemble((key, "dim"), text), (0, 0, 0, _INDENT)), overflow="fold")
