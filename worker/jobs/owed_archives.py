"""Archives ``forget`` dropped without a model call, regenerated once a model answers.

``forget`` never waits for a model (:mod:`worker.jobs.forget`): an archive above a forgotten
summary that keeps other members has its entry deleted at once and an ``archive-owed`` intent
recorded, its ``summary`` edges to the members left kept. Every ``run`` (at its start, and about
once a minute while it follows) regenerates those archives from their members under the same
name, lowest tier first, through the same :class:`worker.jobs.repair.Repairer` a repair uses —
the store then holds what a ``forget`` with the model answering leaves. The ``repair-archive``
outcome closes the intent; a model that still fails leaves it open for the next run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial

from memory.store.base import StoreError
from worker.jobs.context import JobContext
from worker.jobs.logread import TransientJobError
from worker.jobs.repair import Repairer
from worker.jobs.repair_plan import model_client
from worker.jobs.retract import with_session_lease
from worker.jobs.runtime import Runtime
from worker.names import JOB_RETRACT

log = logging.getLogger(__name__)


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


def regenerate_owed_archives(runtime: Runtime, shelf: str) -> OwedArchives:
    """Regenerate every owed archive (see the module docstring); errors are reported in the
    result, never raised (the next run tries again)."""
    result = OwedArchives()
    for sid, names in owed_archives(runtime).items():
        try:
            done = with_session_lease(runtime, sid, shelf, JOB_RETRACT, partial(_regenerate, names))
        except (StoreError, TransientJobError, OSError) as exc:
            result.owed += names
            result.why = " ".join(str(exc).split())
            continue
        result.regenerated += done
    left = owed_archives(runtime)
    result.owed = sorted(name for names in left.values() for name in names)
    if result.owed and not result.why:
        result.why = "no model route is configured"
    if result.regenerated:
        log.info("regenerated %d archive(s) forget had dropped", len(result.regenerated))
    return result


def _regenerate(names: list[str], ctx: JobContext) -> list[str]:
    client = model_client(ctx.runtime, ctx.session_id)
    if client is None:
        return []
    with ctx.state() as repos:
        state = repos.sessions.get(ctx.session_id)
    repairer = Repairer(ctx, ctx.store(), state.project if state else "", client)
    repairer.repair_archives(names)
    return repairer.report.regenerated + repairer.report.retracted


__all__ = ["OwedArchives", "owed_archives", "regenerate_owed_archives"]
