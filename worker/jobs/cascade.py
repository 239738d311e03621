"""``cascade``: fold a project's summaries into log₁₆ archive tiers ``sum<L>-<digest12>``.

One run climbs tiers 2…8 of the session's project (:func:`run_cascade`). At each tier the store
is asked for the oldest ``cascade_batch_size`` ``summary <L-1>`` entries no higher summary points
at yet (``$not-summaried``, FIFO); a short tier ends the run. A full batch becomes one archive
(:func:`build_archive`): the name is content-addressed by the sorted member names, so a re-run
over the same members finds the existing archive and makes no model call; the ``summary`` edges
from the archive to every member are always re-asserted (a crash between the entry and its edges
heals on the next run). A full tier therefore climbs within one run.

Failures: a tier query that fails warns and ends the run (the job still succeeds); a reply that
is not usable warns ``cascade archive produced nothing usable at tier <L>`` and ends the run (the
next cascade retries that tier); a failed or truncated model call is retried by the queue with
the next model route; a missing API key fails the job permanently; store errors propagate to the
job guard.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dsh_memory_worker.memory.consolidation.archive import (
    ArchiveMember,
    archive_levels,
    not_summarised_query,
    plan_cascade_batch,
    write_archive_text,
)
from dsh_memory_worker.memory.constants import REL_SUMMARY
from dsh_memory_worker.memory.entries import (
    LOG_EDGE_POLICY,
    archive_name,
    scopes_for,
    summary_policy,
)
from dsh_memory_worker.memory.llm import (
    ModelClient,
    PermanentModelError,
    RetryableModelError,
    UnusableModelOutput,
    one_line,
)
from dsh_memory_worker.memory.store.base import MemoryStore, StoreError, TransientStoreError
from dsh_memory_worker.worker.jobs.archive_lease import hold_archive_lease
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.models import job_attempt, model_client
from dsh_memory_worker.worker.jobs.provenance import current_writer, record_written
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.names import JOB_CASCADE

log = logging.getLogger(__name__)


@dataclass(slots=True)
class CascadeReport:
    """What one cascade run did: archives created and (re-)asserted, by name."""

    created: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    edges: int = 0
    stopped: str = ""


def build_archive(
    store: MemoryStore,
    client: ModelClient,
    level: int,
    members: Sequence[ArchiveMember],
    *,
    project: str,
    attempt: int = 0,
    on_entry: Callable[[str, bool], None] | None = None,
) -> tuple[str, bool, int] | None:
    """Create (if absent) the tier-``level`` archive of ``members`` and assert its edges.

    ``on_entry(name, created)`` runs between the entry and its edges (the provenance row: a crash
    before it leaves edges unasserted, so the next run meets the archive again). Returns
    ``(name, created, edges)``, or ``None`` when the model's reply was unusable (nothing
    written). Model call failures raise ``RetryableModelError``.
    """
    name = archive_name(level, [m.name for m in members])
    scopes = scopes_for(project)
    created = False
    if store.knowledge_get(name) is None:
        try:
            archive = write_archive_text(client, level, members, attempt)
        except UnusableModelOutput as exc:
            log.warning(
                "cascade archive produced nothing usable at tier %d: %s", level, one_line(str(exc))
            )
            return None
        policy = summary_policy(level)
        created = store.knowledge_create(
            name, archive.markdown, tags=policy.tags, scopes=scopes, embed=policy.embed
        )
    if on_entry is not None:
        on_entry(name, created)
    for member in members:
        store.statement_create(
            name, REL_SUMMARY, member.name, scopes=scopes, embed=LOG_EDGE_POLICY.embed
        )
    return name, created, len(members)


#: How long a cascade waits for a repair that is rewriting the project's archives before it
#: gives up for now (the job is retried with back-off).
ARCHIVE_LEASE_WAIT_S = 5.0


def run_cascade(
    store: MemoryStore,
    client: ModelClient,
    project: str,
    *,
    batch_size: int,
    attempt: int = 0,
    heartbeat: Callable[[], None] | None = None,
    on_entry: Callable[[str, bool], None] | None = None,
) -> CascadeReport:
    """Climb tiers 2…8 of ``project`` once (see the module docstring); ``on_entry`` as in
    :func:`build_archive`."""
    report = CascadeReport()
    for level in archive_levels():
        try:
            rows = store.query(not_summarised_query(level, project, batch_size))
        except TransientStoreError:
            raise
        except StoreError as exc:
            log.warning("cascade query failed at tier %d: %s", level, one_line(str(exc)))
            report.stopped = f"query failed at tier {level}"
            return report
        members = plan_cascade_batch(rows, level, batch_size)
        if members is None:
            report.stopped = f"tier {level} not full"
            return report
        built = build_archive(
            store, client, level, members, project=project, attempt=attempt, on_entry=on_entry
        )
        if built is None:
            report.stopped = f"nothing usable at tier {level}"
            return report
        name, created, edges = built
        (report.created if created else report.linked).append(name)
        report.edges += edges
        if heartbeat is not None:
            heartbeat()
    report.stopped = "top tier reached"
    return report


def cascade_project(
    runtime: Runtime,
    store: MemoryStore,
    client: ModelClient,
    project: str,
    *,
    attempt: int = 0,
    heartbeat: Callable[[], None] | None = None,
) -> CascadeReport:
    """:func:`run_cascade` with the configured batch size, recording who wrote each archive it
    created (provenance, for ``reconsolidate --stale``) before its member edges; an archive found
    already written without a row (its run died before the row) gets the row a clean run
    records."""
    writer = current_writer(runtime, attempt)

    def record(name: str, created: bool) -> None:
        record_written(runtime, store.shelf, "archive", [name], writer, only_missing=not created)

    return run_cascade(
        store,
        client,
        project,
        batch_size=runtime.settings.cascade_batch_size,
        attempt=attempt,
        heartbeat=heartbeat,
        on_entry=record,
    )


def cascade(ctx: JobContext) -> JobOutput:
    """The ``cascade`` job for the project of ``ctx``'s session."""
    settings = ctx.runtime.settings
    if not settings.cascade_enabled:
        return skipped("cascade disabled")
    with ctx.state() as repos:
        session = repos.sessions.get(ctx.session_id)
    if session is None:
        return skipped("session not seen by the watcher yet")
    client = model_client(ctx.runtime, ctx.session_id)
    if not client.configured:
        return skipped("no model route")
    attempt = job_attempt(ctx, JOB_CASCADE)
    try:
        with hold_archive_lease(ctx, session.project, wait_s=ARCHIVE_LEASE_WAIT_S):
            report = cascade_project(
                ctx.runtime,
                ctx.store(),
                client,
                session.project,
                attempt=attempt,
                heartbeat=ctx.heartbeat,
            )
    except RetryableModelError as exc:
        raise TransientJobError(str(exc)) from None
    except PermanentModelError as exc:  # e.g. the route's key variable is unset
        raise PermanentJobError(str(exc)) from None
    detail = (
        f"project {session.project}: {len(report.created)} archives created, "
        f"{len(report.linked)} re-linked; {report.stopped}"
    )
    return JobOutput(status="done", detail=detail, written=len(report.created), edges=report.edges)


__all__ = [
    "CascadeReport",
    "build_archive",
    "cascade",
    "cascade_project",
    "run_cascade",
]
