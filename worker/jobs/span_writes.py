"""Writing one planned slice of a span: its entries get-before-create, its withdrawals removed.

:func:`write_plan` is the write step of ``log_span``: the entries of a
:class:`memory.span.SpanPlan` go to the store in batches (withdrawn ones are never written, and
deleted if an earlier run wrote them), then the earlier entries a new marker withdrew are
retracted; each retraction is recorded. It receives what it uses — the store, the session id,
the lease heartbeat and the retraction recorder — not the job's context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dsh_memory_worker.memory import entries
from dsh_memory_worker.memory.constants import REL_BELONG_TO
from dsh_memory_worker.memory.entries import MESSAGE_POLICY, scopes_for
from dsh_memory_worker.memory.span import SpanPlan
from dsh_memory_worker.memory.store.base import (
    BatchWriter,
    EntryWrite,
    MemoryStore,
    StatementWrite,
    write_batch,
)
from dsh_memory_worker.worker.jobs import store_writes
from dsh_memory_worker.worker.jobs.context import Counts, warn_once
from dsh_memory_worker.worker.jobs.store_writes import existing_names
from dsh_memory_worker.worker.state.audit import RetractionOutcome

#: Records one retraction: entry, ordinal, marker seq, marker kind, outcome, detail
#: (:meth:`worker.jobs.context.JobContext.record_retraction`).
RecordRetraction = Callable[[str, int, int, str, RetractionOutcome, str | None], None]


def write_plan(
    store: MemoryStore,
    plan: SpanPlan,
    *,
    session_id: str,
    project: str,
    withdrawn: dict[int, tuple[int, str]],
    heartbeat: Callable[[], None],
    record: RecordRetraction,
    edges: Sequence[StatementWrite] = (),
) -> Counts:
    """Write ``plan``'s entries and retract what its markers withdrew; what was done.
    ``withdrawn`` maps a withdrawn seq to the ``(marker seq, kind)`` that withdrew it.
    ``edges`` (the span's owed ``belongTo`` edges, none of a withdrawn or retracted ordinal) go
    in the last entry batch's transaction: one store transaction for a span's entries and
    edges, not one each."""
    done = Counts()
    retract = _Retract(store, session_id, record)
    _write_entries(store, plan, project, withdrawn, done, heartbeat, retract, edges)
    for item in plan.retract:
        if retract(item.name, item.ordinal, item.marker_seq, item.kind, quiet_absent=False):
            done.retracted += 1
    done.withdrawn = sum(1 for item in plan.items if item.withdrawn)
    return done


def _write_entries(
    store: MemoryStore,
    plan: SpanPlan,
    project: str,
    withdrawn: dict[int, tuple[int, str]],
    done: Counts,
    heartbeat: Callable[[], None],
    retract: _Retract,
    edges: Sequence[StatementWrite],
) -> None:
    # Get before create: a natively batched store decides existence inside the batch's own
    # transaction; any other store is asked first (one query per 100 names).
    present = (
        set()
        if isinstance(store, BatchWriter)
        else existing_names(store, [item.name for item in plan.items if not item.withdrawn])
    )
    pending: list[EntryWrite] = []

    def flush(statements: Sequence[StatementWrite] = ()) -> None:
        # One store transaction per batch (natively batched stores); the watermark advances
        # only after every batch of the slice is durable.
        if pending or statements:
            created = len(write_batch(store, pending, statements).created_names)
            done.written += created
            done.duplicates += len(pending) - created
            done.edges += len(statements)
            pending.clear()
            heartbeat()

    for n, item in enumerate(plan.items):
        if n and n % 64 == 0:
            heartbeat()
        if item.withdrawn:
            # Never written; one an earlier run wrote (before the marker landed) is removed.
            flush()
            marker_seq, kind = withdrawn.get(item.seq, (-1, ""))
            if retract(item.name, item.ordinal, marker_seq, kind, quiet_absent=True):
                done.retracted += 1
            continue
        if item.name in present:
            done.duplicates += 1
            continue
        pending.append(
            EntryWrite(
                item.name,
                item.markdown,
                tags=tuple(item.tags or MESSAGE_POLICY.tags),
                scopes=tuple(item.scopes or scopes_for(project)),
                embed=item.embed,
            )
        )
        if len(pending) >= store_writes.WRITE_BATCH:
            flush()
    # The edges ride in the last batch (a batch stays within WRITE_BATCH edges).
    size = store_writes.WRITE_BATCH
    for start in range(0, len(edges), size):
        flush(edges[start : start + size])
    flush()


class _Retract:
    """Deletes one withdrawn entry (get before delete) and its ``belongTo`` edge, and records
    what happened. The edge goes too so a retracted store equals one that never saw the message
    (a clean run); it is removed even when the entry is already gone, which heals a crash
    between the two deletes."""

    def __init__(self, store: MemoryStore, session_id: str, record: RecordRetraction) -> None:
        self.store = store
        self.node = entries.session_name(session_id)
        self.record = record

    def __call__(
        self, name: str, ordinal: int, marker_seq: int, kind: str, *, quiet_absent: bool
    ) -> bool:
        store = self.store
        existed = store.knowledge_get(name) is not None
        if not store.features().delete:
            warn_once(
                "no-delete",
                "withdrawn messages cannot be retracted: this store has no knowledge-delete, "
                "so they are skipped instead of removed",
            )
            if existed:
                self.record(
                    name, ordinal, marker_seq, kind, "failed", "store has no knowledge-delete"
                )
            return False
        store.statement_delete(name, REL_BELONG_TO, self.node)
        if not existed:
            if not quiet_absent:
                self.record(name, ordinal, marker_seq, kind, "absent", None)
            return False
        removed = store.knowledge_delete(name)
        self.record(name, ordinal, marker_seq, kind, "retracted" if removed else "absent", None)
        return removed
