"""Tables sized to the terminal: every command prints its tables through :func:`print_table`.

Rich measures the console (``COLUMNS``, else the terminal's size, else 80 columns when the output
is not a terminal) and shrinks the columns to fit; a cell's text folds onto the next line rather
than being cut with "…", so nothing is lost at 80 columns. A table too wide for the terminal
first leaves out its ``optional`` columns (one line on stderr names them). ``--wide`` prints the
table whole at its natural width (one line per row, however wide) — for a wide terminal or a
pager; ``--json`` is the form for programs.

Session ids (36 characters) are shown short in a table at the terminal's width
(:func:`short_ids`: 8 characters, longer when needed to tell them apart, as ``git`` shortens
commits), so that a session is one line at 80 columns; ``--wide`` and ``--json`` show them whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from dsh_memory_worker.worker.commands.options import err

#: A width no table reaches: the console :func:`print_table` measures a table's natural width on.
_UNBOUNDED = 100_000


#: Characters of a short id (at least; more when two ids share the prefix).
SHORT_ID = 8


def short_ids(ids: Sequence[str], length: int = SHORT_ID) -> dict[str, str]:
    """Each of ``ids`` as its shortest prefix of at least ``length`` characters that is the
    prefix of no other id (the whole id when it is that short, or when another starts with it).
    """
    unique = sorted(set(ids))
    shown = {}
    for index, sid in enumerate(unique):
        # Sorted, the ids sharing the longest prefix with ``sid`` are its neighbours.
        shared = 0
        for other in unique[max(index - 1, 0) : index + 2]:
            if other != sid:
                same = next(
                    (i for i, (a, b) in enumerate(zip(sid, other, strict=False)) if a != b),
                    min(len(sid), len(other)),
                )
                shared = max(shared, same)
        shown[sid] = sid[: max(length, shared + 1)]
    return shown


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
