"""What must not be in memory, read from the logs themselves (not from the audit trail).

- every message a whitelisted marker withdrew, in every session the state database knows that
  is not forgotten (:func:`worker.jobs.withdrawals.read_session_log`, the decision of
  :mod:`memory.withdrawal`);
- every message of every forgotten session whose log can still be read, and the texts its
  session node was written from (titles, compaction summaries);
- each session title or compaction summary derived from a withdrawn message (the rule of
  :mod:`memory.titles`: a title citing it, a summary whose checkpoint or shadowed seqs it is).

Each is rendered exactly as its ``msg-*`` entry would have been written — the same
:func:`memory.span.plan_span` the ``log_span`` job uses, with the same content policy
(:func:`worker.jobs.log_span.span_options_for`) — and its distinctive fragments are taken from
the entry's ``## Content`` section (:mod:`worker.verify.fragments`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_memory_worker.memory.consolidation.transcript import transcript_lines
from dsh_memory_worker.memory.entries import message_name, session_name
from dsh_memory_worker.memory.span import SpanOptions, plan_span
from dsh_memory_worker.memory.titles import HostSummary, survey_titles
from dsh_memory_worker.worker.jobs.log_span import span_options_for
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, read_session_log
from dsh_memory_worker.worker.settings import Settings
from dsh_memory_worker.worker.shipping.store import SegmentStore
from dsh_memory_worker.worker.state.sessions import SessionState
from dsh_memory_worker.worker.verify.fragments import Fragments, fragments_of, normalised
from dsh_memory_worker.worker.verify.provenance import KeptText, SessionText

WITHDRAWN = "withdrawn"
FORGOTTEN = "forgotten"
#: a session title or compaction summary derived from a withdrawn message
DERIVED = "derived from a withdrawn message"
_CONTENT = "## Content\n"
_LEDGER = "\n\n## Tool Calls\n"


@dataclass(frozen=True, slots=True)
class Gone:
    """One message that must leave no trace: its session, entry name and seq, why it must be
    gone (``withdrawn`` or ``forgotten``), and what to look for."""

    session_id: str
    name: str
    seq: int
    why: str
    fragments: Fragments
    #: whether an entry of this name is itself a leak (not for a session node's text: the node
    #: may rightly exist, written from a clean title)
    by_name: bool = True


@dataclass(slots=True)
class Sources:
    """Everything a verification looks for."""

    messages: list[Gone] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    #: forgotten sessions whose log is gone: only their entry names can be checked
    forgotten_without_log: list[str] = field(default_factory=list)
    #: session id → why its log could not be read (its withdrawals are unchecked)
    unreadable: dict[str, str] = field(default_factory=dict)
    #: what the entries of each readable, not forgotten session may legitimately hold
    kept: KeptText = field(default_factory=KeptText)

    @property
    def withdrawn_count(self) -> int:
        return sum(1 for m in self.messages if m.why == WITHDRAWN)

    @property
    def too_short(self) -> list[Gone]:
        """Texts with no fragment (too short to tell apart): only message names are checked."""
        return [m for m in self.messages if not m.fragments]


def content_section(markdown: str) -> str:
    """The ``## Content`` section of a rendered ``msg-*`` entry (without its tool ledger)."""
    _, found, body = markdown.partition(_CONTENT)
    return body.partition(_LEDGER)[0] if found else ""


def rendered_bodies(log_: SessionLog, options: SpanOptions) -> dict[int, str]:
    """seq → the ``## Content`` text of every loggable message of ``log_``, as ``log_span``
    would write it when no marker withdrew anything."""
    plan = plan_span(
        log_.events,
        (),
        span_from=log_.state.inherited_cut,
        session_id=log_.session_id,
        project=log_.project,
        inherited_cut=log_.state.inherited_cut,
        whitelist=(),
        options=options,
    )
    return {item.seq: content_section(item.markdown) for item in plan.items}


def _gone(log_: SessionLog, bodies: dict[int, str], seqs: Iterable[int], why: str) -> list[Gone]:
    wanted = set(seqs)
    kept = [text for seq, text in bodies.items() if seq not in wanted]
    found = []
    for seq in sorted(wanted):
        ordinal = log_.ordinals[seq]
        found.append(
            Gone(
                log_.session_id,
                message_name(log_.session_id, ordinal),
                seq,
                why,
                fragments_of(bodies.get(seq, ""), kept),
            )
        )
    return found


def _kept_text(
    log_: SessionLog, options: SpanOptions, bodies: dict[int, str], node: HostSummary | None
) -> SessionText:
    """The session's kept text as its entries render it (:mod:`worker.verify.provenance`):
    each kept message's content by ordinal, plus by seq its transcript line (what a summary's
    model saw), and the node's text."""
    kept = SessionText(log_.session_id)
    for seq, body in bodies.items():
        if seq not in log_.withdrawn:
            kept.messages[log_.ordinals[seq]] = normalised(body)
            kept.by_seq.append((seq, kept.messages[log_.ordinals[seq]]))
    created = log_.state.header.get("created_at")
    lines = transcript_lines(
        log_.events,
        withdrawn=log_.cited,
        inherited_cut=log_.state.inherited_cut,
        tz=options.tz,
        now_ms=created if isinstance(created, int) else 0,
    )
    kept.by_seq += [(line.seq, normalised(line.text)) for line in lines]
    if node is not None and node.text:
        kept.node = (node.seq, normalised(node.text))
    return kept


def _node_texts(
    log_: SessionLog,
    options: SpanOptions,
    kinds: list[str],
    bodies: dict[int, str],
    forgotten: bool,
    sources: Sources,
) -> list[Gone]:
    """Session-node texts that must be gone: every title and compaction summary of a forgotten
    session, and of any other session each one derived from a withdrawn message
    (:func:`memory.titles.survey_titles` decides, as the session node job does)."""
    created = log_.state.header.get("created_at")
    now_ms = created if isinstance(created, int) and created > 0 else 0
    choice = survey_titles(
        log_.events, kinds, cut=log_.state.inherited_cut, tz=options.tz, now_ms=now_ms
    )
    if forgotten:
        summaries = [s.summary for s in choice.skipped] + (
            [choice.chosen] if choice.chosen is not None else []
        )
    else:
        summaries = [s.summary for s in choice.tainted()]
    kept = [] if forgotten else [t for seq, t in bodies.items() if seq not in log_.withdrawn]
    if not forgotten:
        sources.kept.add(_kept_text(log_, options, bodies, choice.chosen))
    return [
        Gone(
            log_.session_id,
            session_name(log_.session_id),
            summary.seq,
            FORGOTTEN if forgotten else DERIVED,
            fragments_of(summary.text, kept),
            by_name=False,
        )
        for summary in sorted(summaries, key=lambda s: s.seq)
        if summary.text
    ]


def collect(
    settings: Settings, sessions: Iterable[SessionState], segments: SegmentStore | None = None
) -> Sources:
    """Read every session's log and collect what must be gone (see the module docstring); with
    log shipping (``segments``) the shipped bytes are read, not the DSH home."""
    options = span_options_for(settings)
    kinds = list(settings.withdrawal_kinds)
    sources = Sources()
    for state in sessions:
        sid = state.session_id
        if state.forgotten:
            sources.forgotten.append(sid)
        if not state.path:
            if state.forgotten:
                sources.forgotten_without_log.append(sid)
            continue
        try:
            log_ = read_session_log(state, kinds, segments=segments)
        except (PermanentJobError, TransientJobError, OSError) as exc:
            if state.forgotten:
                sources.forgotten_without_log.append(sid)
            else:
                sources.unreadable[sid] = " ".join(str(exc).split())
            continue
        bodies = rendered_bodies(log_, options)
        if state.forgotten:
            sources.messages += _gone(log_, bodies, log_.ordinals, FORGOTTEN)
        else:
            sources.messages += _gone(log_, bodies, log_.withdrawn, WITHDRAWN)
        sources.messages += _node_texts(log_, options, kinds, bodies, state.forgotten, sources)
    return sources


def forgotten_names(session_id: str) -> tuple[str, str, str]:
    """LIKE patterns / names no forgotten session may still have: its messages, its span
    summaries and its session node."""
    return (f"msg-{session_id}-%", f"sum-{session_id}-%", session_name(session_id))
