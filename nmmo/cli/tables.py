"""Tables that never cut a name, whatever the width.

Given a table wider than the console, rich shrinks its columns and cuts what no longer fits:
policy names and headers came out as ``Battl…`` and ``Lifet…`` at 80 or 100 columns. `fit`
instead splits such a table into several, each with the table's key columns (the first `keys`:
the policy, the metric) and as many of the other columns as fit at their natural width, in order;
every column folds rather than cuts, so a single name wider than the console wraps onto the next
line instead of losing its end. Every command prints its tables through `print_table`.
"""

from __future__ import annotations

import copy
import dataclasses

from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table


def _with_columns(table: Table, columns: list, title: object, caption: object) -> Table:
    """A copy of `table` (rows, styles, box) holding only `columns`, every one folding, never cutting."""
    piece = copy.copy(table)
    piece.columns = [dataclasses.replace(column, _index=i, overflow="fold") for i, column in enumerate(columns)]
    piece.title, piece.caption = title, caption
    return piece


def _width(console: Console, table: Table) -> int:
    """The table's natural width (every cell on one line)."""
    return Measurement.get(console, console.options.update(width=10**6), table).maximum


def fit(table: Table, width: int, console: Console, keys: int = 1) -> list[Table]:
    """`table` as tables of at most `width` columns of text where its columns allow (see the module
    notes): the first carries the title, the last the caption, the others say they continue it."""
    if _width(console, table) <= width or len(table.columns) <= keys + 1:
        return [_with_columns(table, list(table.columns), table.title, table.caption)]
    head, rest = list(table.columns[:keys]), list(table.columns[keys:])
    groups: list[list] = [[]]
    for column in rest:
        trial = _with_columns(table, head + groups[-1] + [column], None, None)
        if groups[-1] and _width(console, trial) > width:
            groups.append([])
        groups[-1].append(column)
    more = f"{str(table.title or '').split(' (')[0]} (continued)".strip()  # "Metrics (continued)"
    return [_with_columns(table, head + group, table.title if i == 0 else more,
                          table.caption if i == len(groups) - 1 else None) for i, group in enumerate(groups)]


def fitted(table: Table, console: Console, keys: int = 1) -> Group:
    """`fit` for `console`'s width, as one renderable (a live display updates it whole)."""
    return Group(*fit(table, console.width, console, keys))


def print_table(console: Console, table: Table, keys: int = 1) -> None:
    """Print `table` on `console` without cutting a name (`fit`)."""
    for piece in fit(table, console.width, console, keys):
        console.print(piece)
