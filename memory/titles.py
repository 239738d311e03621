"""Which host summary the ``session-<id>`` node shows: the first *clean* one.

A host summary is a ``session/title`` or a ``compaction/summary`` (at or after a fork's
inherited cut). Both are text derived from messages, so both are withdrawn with their sources:

* a ``session/title`` is *tainted* when a seq in its ``messageSeqs`` or ``sourceEventSeqs`` is
  withdrawn (DSH 0.2's ``{kind:'fallback'}`` title is the first words of the prompt it cites; a
  ``{kind:'provider'}`` title is model-written from the prompts it cites);
* a ``compaction/summary`` is tainted when its checkpoint ``user/message`` (the
  ``compact-checkpoint`` replacement that cites it, or the one right after it) is withdrawn, or
  when one of its ``shadowedSeqs`` is.

The node shows the first host summary that is clean and has text. With no withdrawal that is the
reference plugin's rule (the first title or summary wins; a later one never replaces it), so such
sessions are written exactly as before; a withdrawal of the chosen one's sources moves the node to
the next clean one, and with none left there is no node.

:class:`TitleSurvey` consumes a session's events one at a time (constant memory but for the
candidates and the cited seqs); :func:`choose_title` is the decision, a pure function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, Final, Literal

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.entries import session_node_text
from dsh_memory_worker.memory.messages import source_kind
from dsh_memory_worker.memory.withdrawal import DEFAULT_WHITELIST, is_marker

TITLE: Final = "session/title"
COMPACTION_SUMMARY: Final = "compaction/summary"
#: Events whose text can become the session node.
HOST_SUMMARY_EVENTS: Final = frozenset({TITLE, COMPACTION_SUMMARY})
CHECKPOINT_KIND: Final = "compact-checkpoint"

SkipReason = Literal["withdrawn-source", "withdrawn-checkpoint", "empty", "later"]


@dataclass(frozen=True, slots=True)
class HostSummary:
    """One ``session/title`` or ``compaction/summary``: its rendered node text and what it is
    derived from (``cites``: the message seqs; ``checkpoint``: a summary's checkpoint seq)."""

    seq: int
    type: str
    source: str  # a title's source kind (fallback / provider / user), "compaction" for summaries
    text: str
    cites: frozenset[int] = frozenset()
    checkpoint: int | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A host summary the node does not show, and why (``seq``: the withdrawn seq that taints
    it and ``marker_seq``/``marker_kind``: the marker that withdrew it, when tainted)."""

    summary: HostSummary
    reason: SkipReason
    seq: int | None = None
    marker_seq: int | None = None
    marker_kind: str | None = None

    def describe(self) -> str:
        if self.reason == "withdrawn-source":
            return (
                f"cites message seq {self.seq}, withdrawn by the {self.marker_kind} marker "
                f"at seq {self.marker_seq}"
            )
        if self.reason == "withdrawn-checkpoint":
            return (
                f"its checkpoint seq {self.seq} was withdrawn by the {self.marker_kind} "
                f"marker at seq {self.marker_seq}"
            )
        if self.reason == "empty":
            return "no text after redaction"
        return "a later host summary never replaces a clean earlier one"


@dataclass(frozen=True, slots=True)
class TitleChoice:
    """The host summary the node shows (``None``: no node) and every other one, with why."""

    chosen: HostSummary | None
    skipped: tuple[Skipped, ...] = ()

    @property
    def text(self) -> str | None:
        return self.chosen.text if self.chosen is not None else None

    def tainted(self) -> list[Skipped]:
        return [s for s in self.skipped if s.reason.startswith("withdrawn")]


def choose_title(
    summaries: Iterable[HostSummary], withdrawn: Mapping[int, tuple[int, str]]
) -> TitleChoice:
    """The first clean host summary with text (log order), and why each other one is skipped.

    ``withdrawn`` maps each withdrawn seq to ``(marker seq, marker kind)`` of the first marker
    that cites it."""
    chosen: HostSummary | None = None
    skipped: list[Skipped] = []
    for summary in sorted(summaries, key=lambda s: s.seq):
        taint = _taint(summary, withdrawn)
        if taint is not None:
            skipped.append(taint)
        elif not summary.text:
            skipped.append(Skipped(summary, "empty"))
        elif chosen is None:
            chosen = summary
        else:
            skipped.append(Skipped(summary, "later"))
    return TitleChoice(chosen, tuple(skipped))


def _taint(summary: HostSummary, withdrawn: Mapping[int, tuple[int, str]]) -> Skipped | None:
    if summary.checkpoint is not None and summary.checkpoint in withdrawn:
        marker_seq, kind = withdrawn[summary.checkpoint]
        return Skipped(summary, "withdrawn-checkpoint", summary.checkpoint, marker_seq, kind)
    for seq in sorted(summary.cites):
        if seq in withdrawn:
            marker_seq, kind = withdrawn[seq]
            return Skipped(summary, "withdrawn-source", seq, marker_seq, kind)
    return None


def _seqs(value: Any) -> frozenset[int]:
    if not isinstance(value, list | tuple):
        return frozenset()
    return frozenset(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _title_source(event: Event) -> str:
    source = event.data.get("source") if isinstance(event.data, Mapping) else None
    kind = source.get("kind") if isinstance(source, Mapping) else None
    return kind if isinstance(kind, str) else ""


@dataclass(slots=True)
class TitleSurvey:
    """Collects a session's host summaries and withdrawals from its events, one at a time.

    ``cut``: a fork's inherited cut (host summaries and markers below it are the parent's);
    ``tz``/``now_ms``: how node text is rendered (``now_ms`` dates timeless events)."""

    whitelist: frozenset[str] = DEFAULT_WHITELIST
    cut: int = 0
    tz: tzinfo | None = None
    now_ms: int = 0
    summaries: list[HostSummary] = field(default_factory=list)
    withdrawn: dict[int, tuple[int, str]] = field(default_factory=dict)
    _open_summary: int | None = None  # a summary whose checkpoint is the next event

    def add(self, event: Event) -> None:
        if event.seq < self.cut:
            return
        after_summary, self._open_summary = self._open_summary, None
        if event.type in HOST_SUMMARY_EVENTS:
            self._add_summary(event)
        elif event.type == "user/message":
            if source_kind(event) == CHECKPOINT_KIND:
                self._attach_checkpoint(event, after_summary)
            if is_marker(event, self.whitelist):
                kind = source_kind(event)
                for seq in event.source_seqs:
                    if seq >= 0:
                        self.withdrawn.setdefault(seq, (event.seq, kind))

    def _add_summary(self, event: Event) -> None:
        text = session_node_text(event, self.tz, self.now_ms)
        data = event.data if isinstance(event.data, Mapping) else {}
        if event.type == TITLE:
            cites = _seqs(data.get("messageSeqs")) | frozenset(event.source_seqs)
            self.summaries.append(HostSummary(event.seq, TITLE, _title_source(event), text, cites))
            return
        cites = _seqs(data.get("shadowedSeqs"))
        self.summaries.append(HostSummary(event.seq, COMPACTION_SUMMARY, "compaction", text, cites))
        self._open_summary = event.seq

    def _attach_checkpoint(self, event: Event, after_summary: int | None) -> None:
        cited = set(event.source_seqs)
        for n in range(len(self.summaries) - 1, -1, -1):
            summary = self.summaries[n]
            if summary.type != COMPACTION_SUMMARY or summary.checkpoint is not None:
                continue
            if summary.seq in cited or summary.seq == after_summary:
                self.summaries[n] = HostSummary(
                    summary.seq,
                    summary.type,
                    summary.source,
                    summary.text,
                    summary.cites,
                    event.seq,
                )
                return

    def choice(self) -> TitleChoice:
        return choose_title(self.summaries, self.withdrawn)


def survey_titles(
    events: Iterable[Event],
    whitelist: Iterable[str] = DEFAULT_WHITELIST,
    *,
    cut: int = 0,
    tz: tzinfo | None = None,
    now_ms: int = 0,
) -> TitleChoice:
    """:func:`choose_title` over ``events`` (a whole log, or from a fork's inherited cut)."""
    survey = TitleSurvey(frozenset(whitelist), cut, tz, now_ms)
    for event in events:
        survey.add(event)
    return survey.choice()
