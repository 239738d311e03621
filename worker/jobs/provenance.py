"""Who writes derived memory: the current writer of a runtime and the provenance rows the jobs
record after each write (state table ``provenance``, see :mod:`worker.state.provenance`).

A row is recorded *after* the store write it describes, so a crash never leaves a row that claims
text the store does not hold. A crash in between leaves an entry without a row only until the
next run meets that entry again: a span summary found beyond the consolidation watermark (its run
never finished) or an archive found over members no archive summarises yet (its edges were never
all asserted) is given the rows a clean run records (:func:`record_written` with ``only_missing``,
:func:`record_missing_derived`), with the writer this run would have used. An archive's row is
recorded before its member edges, so a crash after them cannot leave it unrecorded and unvisited.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsh_memory_worker.memory.consolidation.prompt_version import prompt_version
from dsh_memory_worker.memory.llm import select_route
from dsh_memory_worker.worker.jobs.models import routes_of
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.work_units import WorkUnitOutcome
from dsh_memory_worker.worker.state.database import Repos
from dsh_memory_worker.worker.state.provenance import Provenance, Writer


def current_writer(runtime: Runtime, attempt: int = 0) -> Writer | None:
    """The route ``attempt`` calls (the head route for a first attempt) with today's prompts;
    ``None`` without a route."""
    chosen = select_route(routes_of(runtime.settings), attempt)
    if chosen is None:
        return None
    route = chosen[1]
    return Writer(route.label, route.model, prompt_version(runtime.settings.max_work_units_per_run))


def record_written(
    runtime: Runtime,
    shelf: str,
    kind: str,
    names: Iterable[str],
    writer: Writer | None,
    session_id: str | None = None,
    *,
    only_missing: bool = False,
) -> None:
    """Record that ``writer`` wrote ``names``; nothing without a writer. ``only_missing``: only
    those of ``names`` that have no row (an earlier run died between the store write and its
    row)."""
    unique = list(dict.fromkeys(names))
    if writer is None or not unique:
        return
    with runtime.state.transaction() as repos:
        if only_missing:
            found = repos.provenance.get_many(shelf, unique)
            unique = [name for name in unique if name not in found]
        repos.provenance.record(shelf, unique, kind, writer, session_id)


def is_current(found: Provenance | None, writer: Writer) -> bool:
    """Whether an entry with provenance ``found`` was written by ``writer`` (no row: unknown
    writer, never current)."""
    return found is not None and found.writer == writer


def record_derived(
    runtime: Runtime,
    shelf: str,
    summary: str | None,
    units: Iterable[WorkUnitOutcome],
    writer: Writer | None,
    session_id: str | None,
) -> None:
    """Record a span summary and the work units its extraction yielded (a ``duplicate`` verdict
    stores nothing and gets no row) in one transaction."""
    if writer is None:
        return
    kept = [u.name for u in units if u.verdict != "duplicate"]
    with runtime.state.transaction() as repos:
        _record_derived(repos, shelf, summary, kept, writer, session_id)


def record_missing_derived(
    runtime: Runtime,
    shelf: str,
    summary: str,
    units: Iterable[str],
    writer: Writer | None,
    session_id: str | None,
) -> None:
    """The rows :func:`record_derived` would have written for ``summary`` and the work units
    derived from it (``units``: every ``derivedFrom`` head, as a clean run records each unit it
    kept, a lesson learned before included), when ``summary`` has no row: its run died between
    the summary's store write and the rows."""
    if writer is None:
        return
    with runtime.state.transaction() as repos:
        if not repos.provenance.get_many(shelf, [summary]):
            _record_derived(repos, shelf, summary, list(units), writer, session_id)


def _record_derived(
    repos: Repos,
    shelf: str,
    summary: str | None,
    units: list[str],
    writer: Writer,
    session_id: str | None,
) -> None:
    if summary is not None:
        repos.provenance.record(shelf, [summary], "summary", writer, session_id)
    repos.provenance.record(shelf, units, "work-unit", writer, session_id)
