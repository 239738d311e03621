"""The one line ``run --once`` ends with, from its figures alone (no runtime needed).

:meth:`worker.run.once_children.OnceTotals.summary` writes it for every run; a first run on an
empty home (:mod:`worker.run.empty_home`) writes it with every figure zero, without loading the
job stack that :class:`~worker.run.once_children.OnceTotals` comes with.
"""

from __future__ import annotations

from collections.abc import Collection

from dsh_memory_worker.memory.printable import printable

#: Sessions named at most in the "not scanned" part of the line.
_NAMED: int = 20


def summary_line(
    *,
    sessions: int = 0,
    new_events: int = 0,
    written: int = 0,
    retracted: int = 0,
    edges: int = 0,
    done: int = 0,
    failed: int = 0,
    unscanned: Collection[str] = (),
    unfinished_sessions: Collection[str] = (),
) -> str:
    """The summary (naming every session the run could not finish)."""
    line = (
        f"{sessions} sessions, {new_events} new events; "
        f"{written} entries written, {retracted} retracted, {edges} edges; "
        f"{done} jobs done, {failed} failed"
    )
    if unscanned:
        names = sorted(set(unscanned))
        line += (
            f"; {len(unscanned)} sessions not scanned: "
            + printable(", ".join(names[:_NAMED]))
            + (", ..." if len(names) > _NAMED else "")
            + " (see the lines above; run again once the cause is fixed)"
        )
    if unfinished_sessions:
        line += (
            f"; not finished: {', '.join(unfinished_sessions)} "
            "(why: the lines above, or `memory-worker status`)"
        )
    return line
