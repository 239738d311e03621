"""One vocabulary for where a session's consolidation stands, shared by ``memory-worker status``
(``--json``: each row's ``consolidation_state`` and ``consolidation_why``) and the console
(the sessions list, the session page and Health), so the two never tell different stories.

The words:

- ``off``: consolidation does not run at all (disabled, or no model route), and why;
- ``failing``: the session's newest failing task is a consolidation one (``consolidate`` or
  ``cascade``): it is retried, and its last error says why;
- ``owed``: logged messages that no span summary covers yet (the consolidation lag);
- ``done``: span summaries cover every logged message (or nothing of the session is kept:
  forgotten).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from dsh_memory_worker.worker.names import JOB_CASCADE, JOB_CONSOLIDATE

if TYPE_CHECKING:
    from dsh_memory_worker.worker.settings import Settings

OFF: Final = "off"
FAILING: Final = "failing"
OWED: Final = "owed"
DONE: Final = "done"
#: The tasks whose failure makes a session's consolidation ``failing``.
CONSOLIDATION_TASKS: Final = frozenset({JOB_CONSOLIDATE, JOB_CASCADE})


def consolidating(settings: Settings) -> bool:
    """Consolidation runs: enabled, with a model route to call."""
    return settings.consolidation_enabled and bool(settings.model_routes)


def why_off_of(settings: Settings) -> str | None:
    """Why consolidation does not run (``None`` when it does)."""
    if consolidating(settings):
        return None
    if not settings.consolidation_enabled:
        return "consolidation_enabled is false"
    return "no model route: set model_routes / MEMORY_WORKER_MODEL_ROUTES"


@dataclass(frozen=True, slots=True)
class ConsolidationState:
    """One session's consolidation: a word of the vocabulary above and why."""

    word: str
    why: str


def session_state(
    *,
    off: str | None,
    forgotten: bool,
    lag: int | None,
    failing_task: str | None,
    failing_error: str | None = None,
) -> ConsolidationState:
    """The state of one session: ``off`` is :func:`why_off_of`; ``lag`` the logged messages no
    summary covers (seqs); ``failing_task`` the task of the session's newest failure."""
    if off is not None:
        return ConsolidationState(OFF, off)
    if forgotten:
        return ConsolidationState(DONE, "forgotten: nothing of it is kept")
    if failing_task in CONSOLIDATION_TASKS:
        return ConsolidationState(FAILING, f"{failing_task}: {failing_error or 'failed'}")
    if lag:
        return ConsolidationState(OWED, f"{lag} logged seq(s) not summarised yet")
    if lag is None:
        return ConsolidationState(OWED, "not scanned yet")
    return ConsolidationState(DONE, "summaries cover every logged message")


def annotate_status_rows(rows: list[dict[str, object]], off: str | None) -> None:
    """Add ``consolidation_state`` and ``consolidation_why`` to ``status --json``'s rows
    (:func:`worker.figures.figures`' rows)."""
    for row in rows:
        failure = row.get("last_failure")
        task = failure.get("task") if isinstance(failure, dict) else None
        error = failure.get("error") if isinstance(failure, dict) else None
        lag = row.get("consolidation_lag")
        found = session_state(
            off=off,
            forgotten=bool(row.get("forgotten")),
            lag=lag if isinstance(lag, int) else None,
            failing_task=task if isinstance(task, str) else None,
            failing_error=error if isinstance(error, str) else None,
        )
        row["consolidation_state"] = found.word
        row["consolidation_why"] = found.why
