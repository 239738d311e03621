"""Archives ``forget`` dropped without a model call, regenerated once a model answers.

``forget`` never waits for a model (:mod:`worker.jobs.forget`): an archive above a forgotten
summary that keeps other members has its entry deleted at once and an ``archive-owed`` intent
recorded, its ``summary`` edges to the members left kept. Every ``run`` (at its start, and about
once a minute while it follows: :func:`worker.jobs.retract.regenerate_owed_archives`) and the
daemon's reconcile (a ``retract`` job for the forgotten session, :mod:`worker.watch.owed`)
regenerate those archives from their members under the same name, lowest tier first, through
the same :class:`worker.jobs.repair.Repairer` a repair uses — the store then holds what a
``forget`` with the model answering leaves. The ``repair-archive`` outcome closes the intent; a
model that still fails leaves it open for the next run.
"""

from __future__ import annotations

from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.repair import Repairer
from dsh_memory_worker.worker.jobs.repair_plan import model_client


def regenerate_in(names: list[str], ctx: JobContext) -> list[str]:
    """Regenerate ``names`` (owed by ``ctx``'s forgotten session) under its lease: the archives
    regenerated or retracted. A model that fails raises :class:`TransientJobError`."""
    client = model_client(ctx.runtime, ctx.session_id)
    if client is None:
        return []
    with ctx.state() as repos:
        state = repos.sessions.get(ctx.session_id)
    repairer = Repairer(ctx, ctx.store(), state.project if state else "", client)
    repairer.repair_archives(names)
    return repairer.report.regenerated + repairer.report.retracted


__all__ = ["regenerate_in"]
