"""The repairer's ground floor (see :mod:`worker.jobs.repair`): what it holds for one session
(the store, the model client, the writer its text is recorded under, the report), the store
steps every part of a repair takes (rewrite in place, delete with its provenance row first,
unlink), its audit rows, and :func:`ask_model`, how a model failure turns into a removal or a
retry."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from dsh_memory_worker.memory.entries import scopes_for, summary_policy
from dsh_memory_worker.memory.llm import (
    ModelClient,
    ModelsNotConfigured,
    PermanentModelError,
    RetryableModelError,
)
from dsh_memory_worker.memory.store.base import MemoryStore, NotFoundError
from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.logread import TransientJobError
from dsh_memory_worker.worker.jobs.provenance import current_writer
from dsh_memory_worker.worker.jobs.withdrawals import Withdrawn
from dsh_memory_worker.worker.observability import REPAIRS

if TYPE_CHECKING:
    from dsh_memory_worker.worker.state.database import Repos

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(slots=True)
class RepairReport:
    regenerated: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    unlinked: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    #: every work unit a regeneration yielded (written now or already stored), not duplicates
    units: list[str] = field(default_factory=list)
    #: archives dropped now and owed a regeneration (``owe_archives``)
    owed: list[str] = field(default_factory=list)
    edges_removed: int = 0
    failed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return len(self.regenerated) + len(self.retracted) + len(self.unlinked)


def ask_model(call: Callable[[], T], retry_context: str, failure: str, *args: Any) -> T | None:
    """``call()``'s reply; None when models are not configured or the call failed for good
    (logged as ``failure % (*args, exc)``: the entry is removed instead); a retryable model error
    becomes a :class:`TransientJobError` (``retry_context: exc``), so the job is retried."""
    try:
        return call()
    except ModelsNotConfigured:
        return None
    except RetryableModelError as exc:
        raise TransientJobError(f"{retry_context}: {exc}") from exc
    except PermanentModelError as exc:
        log.warning(failure, *args, exc)
        return None


class RepairBase:
    """What a :class:`~worker.jobs.repair.Repairer` holds for one session under its lease, and
    the store and audit steps every part of a repair takes."""

    def __init__(
        self,
        ctx: JobContext,
        store: MemoryStore,
        project: str,
        client: ModelClient | None,
        *,
        owe_archives: bool = False,
    ) -> None:
        self.ctx = ctx
        #: drop archives that keep members and owe their regeneration (no model call now)
        self.owe_archives = owe_archives
        self.store = store
        self.project = project
        self.scopes = scopes_for(project)
        self.client = client
        self.report = RepairReport()
        self._changed: dict[str, bool] = {}  # summary / archive → removed?
        self.writer = current_writer(ctx.runtime)  # what regenerated text is recorded under
        self._cause: dict[str, Withdrawn | None] = {}
        #: ``summary`` edges of archives to members that left them, removed only once every
        #: archive of the pass is written (see :meth:`repair_archives`)
        self._leaving: list[tuple[str, str]] = []
        self._owed: set[str] = set()  # archives dropped by this pass and owed

    def usable(self) -> bool:
        features = self.store.features()
        if not features.delete:
            self.ctx.warn_once(
                "repair-no-delete",
                "derived memory cannot be repaired: this store has no knowledge-delete / "
                "statement-delete, so summaries, archives and work units keep withdrawn text",
            )
            return False
        if self.client is None and not self.owe_archives:
            self.ctx.warn_once(
                "repair-no-model",
                "no model route is configured: summaries and archives that carried withdrawn "
                "text are removed instead of regenerated",
            )
        return True

    def _rewrite(self, name: str, text: str, level: int) -> None:
        """Replace ``name``'s text: ``knowledge-update`` when the store has it, otherwise
        delete + create (tags and scopes of a tier-``level`` summary)."""
        found = self.store.knowledge_get(name)
        if found is not None and found.content.data == text:
            return
        if found is not None and self.store.features().update:
            try:
                self.store.knowledge_update(name, data=text)
                return
            except NotFoundError:
                pass
        elif found is not None:
            self.store.knowledge_delete(name)
        policy = summary_policy(level)
        self.store.knowledge_create(
            name, text, tags=policy.tags, scopes=self.scopes, embed=policy.embed
        )

    def _delete(self, name: str) -> bool:
        """Delete an entry, its provenance row first: a crash in between leaves an entry without
        a row, which the repair run again finds and deletes, never a row naming no entry."""
        with self.ctx.state() as repos:
            repos.provenance.forget(self.ctx.shelf, [name])
        return self.store.knowledge_delete(name)

    def _unlink(self, head: str, relation: str, tail: str) -> None:
        if self.store.statement_delete(head, relation, tail):
            self.report.edges_removed += 1

    def _count_removal(self, kind: str, name: str, removed: bool) -> str:
        """Count ``name`` (a ``kind`` of entry) as retracted when ``removed``; the audit
        outcome (``retracted``, or ``absent``: it was gone already)."""
        if not removed:
            return "absent"
        self.report.retracted.append(name)
        REPAIRS.labels(kind, "retracted").inc()
        return "retracted"

    def _audit(
        self,
        action: str,
        outcome: str,
        subject: str,
        cause: Withdrawn | None,
        detail: str | None = None,
        *,
        repos: Repos | None = None,
    ) -> None:
        """One audit row of this session's repair: in ``repos``' transaction when given,
        otherwise in a short one of its own."""
        if repos is None:
            with self.ctx.state() as own:
                self._audit(action, outcome, subject, cause, detail, repos=own)
            return
        repos.audit.record(
            action,
            outcome,
            shelf=self.ctx.shelf,
            session_id=self.ctx.session_id,
            subject=subject,
            cause_marker_seq=cause.marker_seq if cause else None,
            source_kind=cause.kind if cause else None,
            detail=detail,
        )


__all__ = ["RepairBase", "RepairReport", "ask_model"]
