"""What a repair of derived memory works on: the summaries of a session that still point at
withdrawn entries (or whose repair a crash interrupted: the audit trail's open intents,
:meth:`worker.state.audit.AuditRepo.pending_repairs`), and the model client it regenerates text
with. :mod:`worker.jobs.repair` carries the repair out."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh_memory_worker.memory.consolidation.transcript import Transcript, build_transcript
from dsh_memory_worker.memory.llm import ModelClient
from dsh_memory_worker.memory.store.base import MemoryStore
from dsh_memory_worker.worker.jobs.models import model_client as consolidation_client
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.storeview import (
    SpanSummaryRef,
    parse_span_summary,
    span_summaries,
    summary_members,
)
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, Withdrawn


@dataclass(frozen=True, slots=True)
class SummaryRepair:
    """One summary to repair: the withdrawn entries it still points at, and the cause."""

    ref: SpanSummaryRef
    dirty: tuple[str, ...]
    cause: Withdrawn | None
    resumed: bool = False


# ---------------------------------------------------------------------------- what to repair


def find_repairs(
    store: MemoryStore, log_: SessionLog, pending: Iterable[str] = ()
) -> list[SummaryRepair]:
    """The session's summaries that point at a withdrawn entry, plus unfinished ones."""
    withdrawn = log_.withdrawn_by_name()
    unfinished = set(pending)
    repairs: list[SummaryRepair] = []
    refs = span_summaries(store, log_.session_id)
    # An unfinished repair whose summary is already gone (retracted before a crash) is done
    # again from the log: that retracts it again (absent) and repairs the archives above it.
    present = {ref.name for ref in refs}
    refs += [
        ref
        for name in sorted(unfinished - present)
        if (ref := parse_span_summary(name, log_.session_id)) is not None
    ]
    for ref in refs:
        dirty = tuple(m for m in summary_members(store, ref.name) if m in withdrawn)
        if not dirty and ref.name not in unfinished:
            continue
        cause = withdrawn[dirty[0]] if dirty else _first_withdrawn(log_, ref)
        repairs.append(SummaryRepair(ref, dirty, cause, resumed=ref.name in unfinished))
    return repairs


def _first_withdrawn(log_: SessionLog, ref: SpanSummaryRef) -> Withdrawn | None:
    inside = [w for seq, w in log_.withdrawn.items() if ref.from_seq <= seq < ref.to_seq]
    return inside[0] if inside else None


def rebuilt_transcript(runtime: Runtime, log_: SessionLog, ref: SpanSummaryRef) -> Transcript:
    """The transcript a summary of ``ref``'s span is (re)written from today: withdrawn and cited
    messages left out, rendered under the current content policy."""
    return build_transcript(
        log_.events_in(ref.from_seq, ref.to_seq),
        max_input_tokens=runtime.settings.max_input_tokens,
        withdrawn=log_.cited,
        inherited_cut=log_.state.inherited_cut,
        before=log_.event_at(ref.from_seq - 1) if ref.from_seq > 0 else None,
        tz=runtime.timezone(),
    )


# ------------------------------------------------------------------------------ model client


def model_client(runtime: Runtime, session_id: str | None = None) -> ModelClient | None:
    """The consolidation jobs' client (calls recorded in ``model_calls``); ``None`` when
    consolidation is off or has no route."""
    if not runtime.settings.consolidation_enabled:
        return None
    client = consolidation_client(runtime, session_id)
    return client if client.configured else None
