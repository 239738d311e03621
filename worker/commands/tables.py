"""Tables sized to the terminal: every command prints its tables through :func:`print_table`.

Rich measures the console (``COLUMNS``, else the terminal's size, else 80 columns when the output
is not a terminal) and shrinks the columns to fit; a cell's text folds onto the next line rather
than being cut with "…", so nothing is lost at 80 columns. A table too wide for the terminal
first leaves out its ``optional`` columns (one line on stderr names them). ``--wide`` prints the
table whole at its natural width (one line per row, however wide) — for a wide terminal or a
pager; ``--json`` is the form for programs.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from worker.commands.options import err

#: A width no table reaches: the console :func:`print_table` measures a table's natural width on.
_UNBOUNDED = 100_000


def natural_width(table: Table) -> int:
    measuring = Console(width=_UNBOUNDED)
    return Measurement.get(measuring, measuring.options, table).maximum


def print_table(table: Table, *, wide: bool = False, optional: Iterable[str] = ()) -> None:
    """Print ``table`` on stdout at the terminal's width — without its ``optional`` columns
    (by header) when it does not fit — or whole at its natural width (``wide``)."""
    for column in table.columns:
        column.overflow = "fold"
    console = Console()
    natural = natural_width(table)
    if wide:
        console = Console(width=max(natural, console.width))
    elif natural > console.width:
        left_out = [c for c in table.columns if c.header in set(optional)]
        if left_out:
            table.columns = [c for c in table.columns if c not in left_out]
            names = ", ".join(str(c.header) for c in left_out)
            err.print(
                f"({names} left out to fit {console.width} columns; --wide shows them)",
                markup=False,
                highlight=False,
            )
    console.print(table)
