"""Which sessions have a repair a crash interrupted, and which archives a model-less ``forget``
dropped and owes (:mod:`worker.jobs.owed_archives`): read from the audit trail alone.

Kept apart from :mod:`worker.jobs.retract`, which finishes those repairs, so that asking (the
reconcile, every start of ``run``) does not import the repair machinery when the answer is none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dsh_memory_worker.worker.state.audit import ACTION_INTENT, ACTION_SUMMARY

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.runtime import Runtime


def sessions_with_pending_repairs(runtime: Runtime) -> list[str]:
    """Sessions with a repair a crash interrupted (intent recorded, not finished)."""
    with runtime.state.read() as repos:
        # One query over the recorded intents (the reconcile asks every interval; a rewrite
        # records one per summary, so the history can be as long as the shelf).
        unclosed = repos.audit.sessions_with_unclosed(ACTION_INTENT, ACTION_SUMMARY)
        known = [repos.sessions.get(sid) for sid in unclosed]  # usually none, or a few
    return [
        state.session_id
        for state in known
        if state is not None and state.path and not state.forgotten
    ]


@dataclass(slots=True)
class OwedArchives:
    """What one pass did: archives regenerated (or retracted: no member left) and those still
    owed, with why."""

    regenerated: list[str] = field(default_factory=list)
    owed: list[str] = field(default_factory=list)
    why: str = ""


def owed_archives(runtime: Runtime) -> dict[str, list[str]]:
    """The archives owed a regeneration, by the forgotten session that dropped them."""
    with runtime.state.read() as repos:
        pairs = repos.audit.owed_archives()
    owed: dict[str, list[str]] = {}
    for sid, name in pairs:
        owed.setdefault(sid, []).append(name)
    return owed
