"""Why an entry may hold a withdrawn message's fragment: its own legitimate sources.

Withdrawn and kept text overlap in real conversations (a prompt retyped after a rewind, "Reading
the file now.", the same request in another session), so finding a withdrawn message's phrase in
an entry proves nothing by itself. A phrase found in an entry is **explained** when it occurs
(as a run of words, :func:`worker.verify.fragments.normalised`) in the text of a kept source of
*that* entry, as the worker would have rendered it:

- ``msg-<session>-<N>``: the kept message with ordinal ``N`` (its ``## Content``);
- ``session-<session>``: the title or compaction summary the node shows;
- ``sum-<session>-<from>-<to>``: the kept messages of seqs ``from``–``to`` of that session, as the
  model saw them (transcript lines) and as their entries read;
- an archive ``sum<L>-…``: the sources of every member its ``summary`` edges reach, down to span
  summaries; a work unit ``wu-…``: the sources of the span summaries its ``derivedFrom`` edges
  name (and what those reach);
- a statement: the sources of its head and its tail.

Anything else — an entry created by hand under any name, an entry of a forgotten session, a
message entry whose message was withdrawn — has no legitimate source and explains nothing.
A session whose log cannot be read has no known sources either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.worker.verify.fragments import normalised

#: how deep archive tiers and work units are followed (far above any real tier count)
_MAX_DEPTH = 16


@dataclass(slots=True)
class SessionText:
    """A readable, not forgotten session's kept text, normalised (see the module docstring)."""

    session_id: str
    #: entry ordinal → its kept message's content
    messages: dict[int, str] = field(default_factory=dict)
    #: (seq, text) of each kept message: its content and its transcript line
    by_seq: list[tuple[int, str]] = field(default_factory=list)
    #: the session node's text and the seq of the host summary it shows
    node: tuple[int, str] | None = None


@dataclass(slots=True)
class KeptText:
    """Every session's kept text, by session id."""

    sessions: dict[str, SessionText] = field(default_factory=dict)

    def add(self, session: SessionText) -> None:
        self.sessions[session.session_id] = session


def _span(name: str) -> tuple[str, int, int] | None:
    """``sum-<sid>-<from>-<to>`` → (sid, from, to)."""
    if not name.startswith("sum-"):
        return None
    head, _, to = name.rpartition("-")
    sid_part, _, start = head.rpartition("-")
    if not (to.isdigit() and start.isdigit()) or len(sid_part) <= len("sum-"):
        return None
    return sid_part[len("sum-") :], int(start), int(to)


def _message(name: str, sessions: Iterable[str]) -> tuple[str, int] | None:
    """``msg-<sid>-<N>`` → (sid, N), for a session id in ``sessions``."""
    head, _, ordinal = name.rpartition("-")
    sid = head[len("msg-") :]
    if name.startswith("msg-") and ordinal.isdigit() and sid in sessions:
        return sid, int(ordinal)
    return None


class Provenance:
    """Decides whether a phrase found in an entry or statement is explained by its sources.

    ``edges`` are the store's statements as (head, relation, tail); only ``summary`` and
    ``derivedFrom`` are followed."""

    def __init__(self, kept: KeptText, edges: Iterable[tuple[str, str, str]]) -> None:
        self._kept = kept
        self._below: dict[str, set[str]] = {}
        for head, relation, tail in edges:
            if relation in (C.REL_SUMMARY, C.REL_DERIVED_FROM) and not head.startswith("msg-"):
                self._below.setdefault(head, set()).add(tail)
        self._spans: dict[str, tuple[list[str], str]] = {}

    def why_not(self, key: str, phrase: str, ends: tuple[str, ...] | None = None) -> str | None:
        """``None`` when a legitimate source of the entry ``key`` (or, for a statement, of one of
        its ``ends``) holds ``phrase``; otherwise why none does, in a few words."""
        needle = f" {phrase} "
        reasons = []
        for name in ends or (key,):
            texts, described = self._sources(name)
            if any(needle in text for text in texts):
                return None
            reasons.append(described)
        return "; ".join(dict.fromkeys(reasons))

    def _sources(self, name: str) -> tuple[list[str], str]:
        found = self._spans.get(name)
        if found is None:
            found = self._resolve(name)
            self._spans[name] = found
        return found

    def _resolve(self, name: str) -> tuple[list[str], str]:
        sessions = self._kept.sessions
        message = _message(name, sessions)
        if message is not None:
            sid, ordinal = message
            text = sessions[sid].messages.get(ordinal)
            if text is None:
                return [], f"{name} renders no kept message (withdrawn, or not a message)"
            return [text], f"its kept message ({name}) does not contain it"
        if name.startswith("session-") and name[len("session-") :] in sessions:
            node = sessions[name[len("session-") :]].node
            if node is None:
                return [], "its session shows no clean title or summary"
            return [node[1]], f"the title or summary it shows (seq {node[0]}) does not contain it"
        span = _span(name)
        if span is not None:
            sid, start, to = span
            if sid not in sessions:
                return [], f"{name} is of no readable, kept session"
            texts = [t for seq, t in sessions[sid].by_seq if start <= seq <= to]
            return texts, (
                f"none of the kept messages of seqs {start}-{to} of session {sid} "
                f"({len(texts)} texts) contains it"
            )
        if name.startswith(("sum", "wu-")):
            spans = sorted(self._reach(name))
            if not spans:
                return [], "it derives from no span summary (no summary or derivedFrom edge)"
            texts = [t for s in spans for t in self._sources(s)[0]]
            shown = ", ".join(spans[:3]) + (f" and {len(spans) - 3} more" if len(spans) > 3 else "")
            return (
                texts,
                f"none of the kept messages of the spans it derives from ({shown}) contains it",
            )
        return [], "no legitimate source: not an entry the worker derives from a kept message"

    def _reach(self, name: str) -> set[str]:
        """The span summaries below ``name`` through ``summary`` / ``derivedFrom`` edges."""
        found: set[str] = set()
        seen = {name}
        level = {name}
        for _ in range(_MAX_DEPTH):
            below = {t for n in level for t in self._below.get(n, ())} - seen
            if not below:
                break
            seen |= below
            found |= {n for n in below if _span(n) is not None}
            level = {n for n in below if _span(n) is None}
        return found


def normalised_texts(texts: Iterable[str]) -> list[str]:
    return [normalised(t) for t in texts if t]
