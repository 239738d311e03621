"""Entry names, entry markdown and the tags / scopes / embed flag of each entry kind — the memory
layout of the ``dsh-hypatia-auto-memory`` plugin. Pure."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.content.dates import absolutise_dates, iso_utc, utc_date
from dsh_memory_worker.memory.content.slugs import slugify
from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.ledger import LedgerItem, render_ledger
from dsh_memory_worker.memory.redaction import redact

# ---- names ------------------------------------------------------------------------------------


def message_name(session_id: str, ordinal: int) -> str:
    """``msg-<sessionId>-<N>`` (``C.MESSAGE_NAME``, spelled out: one per message and edge)."""
    return f"msg-{session_id}-{ordinal}"


def session_name(session_id: str) -> str:
    """``session-<sessionId>``."""
    return C.SESSION_NAME.format(session_id=session_id)


def span_summary_name(session_id: str, from_seq: int, to_seq: int) -> str:
    """``sum-<sessionId>-<fromSeq>-<coveredToSeq>``."""
    return C.SPAN_SUMMARY_NAME.format(session_id=session_id, from_seq=from_seq, to_seq=to_seq)


def archive_name(level: int, member_names: Iterable[str]) -> str:
    """``sum<level>-<first 12 hex of SHA-256 of the sorted member names joined by \\n>``:
    order-independent, and the tier is part of the name."""
    joined = "\n".join(sorted(member_names))
    digest = hashlib.sha256(joined.encode("utf-8")).hexdigest()[: C.ARCHIVE_DIGEST_LEN]
    return C.ARCHIVE_NAME.format(level=level, digest=digest)


def work_unit_content(content: str, classification: str | None = None) -> str:
    """The model's content plus ``\\n\\n_Classification: <c>_`` when one was given."""
    return f"{content}\n\n_Classification: {classification}_" if classification else content


def work_unit_name(title: str, content: str) -> str:
    """``wu-<slug>-<hash8>``: slug of the title; hash over ``slug + "\\n" + content.strip()``,
    where ``content`` already carries any classification suffix (:func:`work_unit_content`)."""
    slug = slugify(title)
    digest = hashlib.sha256(f"{slug}\n{content.strip()}".encode()).hexdigest()
    return C.WORK_UNIT_NAME.format(slug=slug, digest=digest[: C.WORK_UNIT_DIGEST_LEN])


def is_operational_name(name: str) -> bool:
    """Names the log layer owns (``msg-``, ``sum…``, ``session-``, ``hypatia-dream-run-``)."""
    return name.startswith(C.OPERATIONAL_PREFIXES)


def is_operational_tag(tag: str) -> bool:
    """Tags of the log layer: ``message``, ``session``, ``hypatia-dream-run``, ``summary`` and
    any ``summary <n>``."""
    return tag in C.OPERATIONAL_TAGS or tag.startswith(C.TAG_SUMMARY + " ")


# ---- tags, scopes, embed ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntryPolicy:
    """How an entry (or a statement) is written: its tags, and whether it gets a vector."""

    tags: tuple[str, ...]
    embed: bool


MESSAGE_POLICY = EntryPolicy(tags=(C.TAG_MESSAGE,), embed=False)
SESSION_POLICY = EntryPolicy(tags=(C.TAG_SESSION,), embed=False)
#: ``belongTo`` (msg → session) and ``summary`` (sum → member) edges.
LOG_EDGE_POLICY = EntryPolicy(tags=(), embed=False)
#: ``is_a``, ``derivedFrom`` and adjudicated work-unit statements are embedded.
WORK_UNIT_EDGE_POLICY = EntryPolicy(tags=(), embed=True)


def summary_policy(level: int = 1) -> EntryPolicy:
    """``['summary', 'summary <level>']``, embedded (span summaries are level 1)."""
    return EntryPolicy(tags=(C.TAG_SUMMARY, C.TAG_SUMMARY_LEVEL.format(level=level)), embed=True)


def work_unit_policy(model_tags: Iterable[str] = ()) -> EntryPolicy:
    """``['memory', 'work-unit', …slug of each model tag]`` cut to 8 in total, embedded."""
    tags = [C.TAG_MEMORY, C.TAG_WORK_UNIT, *(slugify(tag) for tag in model_tags)]
    return EntryPolicy(tags=tuple(tags[: C.WORK_UNIT_MAX_TAGS]), embed=True)


def scopes_for(project: str) -> tuple[str, ...]:
    """Every entry and statement is written with ``scopes: [project]``."""
    return (project,)


# ---- entry bodies -----------------------------------------------------------------------------


def render_message(
    *,
    role: str,
    time_ms: int | None,
    body: str,
    turn: int | None = None,
    interrupted: bool = False,
    ledger: Sequence[LedgerItem] = (),
) -> str:
    """The markdown of a ``msg-*`` entry (lines joined with ``\\n``)::

        ## Role / user|assistant / ## Timestamp / <ISO-8601 UTC> / [## Turn / <n>] /
        ## Content / <body>[\\n\\n[turn interrupted mid-stream]] / [## Tool Calls / rows]

    ``body`` is already cleaned (redact → cap → absolutise). ``## Turn`` is written for the
    assistant only (``0`` when unknown). A blank body with a ledger reads ``(tool calls only)``.
    An event without a time gets the timestamp ``unknown``; an out-of-range one
    ``invalid (<ms> ms)``.
    """
    stamp = "unknown" if time_ms is None else _timestamp(time_ms)
    lines = ["## Role", role, "", "## Timestamp", stamp, ""]
    if role == "assistant":
        lines += ["## Turn", str(turn or 0), ""]
    text = C.TOOL_CALLS_ONLY if not body.strip() and ledger else body
    if interrupted:
        text += f"\n\n{C.INTERRUPTED_SUFFIX}"
    lines += ["## Content", text]
    if ledger:
        lines += ["", "## Tool Calls", *render_ledger(ledger)]
    return "\n".join(lines)


def _timestamp(ms: int) -> str:
    try:
        return iso_utc(ms)
    except ValueError:
        return f"invalid ({ms} ms)"


def session_node_text(event: Event | None, tz: tzinfo | None = None, now_ms: int = 0) -> str:
    """The text of the ``session-<id>`` node from a host summary event: ``session/title`` →
    its title, ``compaction/summary`` → its flattened summary; redacted, absolutised against the
    event time (``now_ms`` when it has none) and trimmed. Any other event → ``''`` (no node)."""
    if event is None or not isinstance(event.data, Mapping):
        return ""
    if event.type == "session/title":
        title = event.data.get("title")
        raw = title if isinstance(title, str) else ""
    elif event.type == "compaction/summary":
        summary = event.data.get("summary")
        raw = flatten_blocks(summary if isinstance(summary, list | tuple) else ())
    else:
        return ""
    base = event.time if event.time is not None else now_ms
    return absolutise_dates(redact(raw), base, tz).strip()


def archive_data(level: int, summary: str, title: str | None = None) -> str:
    """``# <title>\\n\\n<summary>``; the title defaults to ``Archive tier <level>``."""
    heading = (
        title.strip() if title and title.strip() else C.ARCHIVE_DEFAULT_TITLE.format(level=level)
    )
    return f"# {heading}\n\n{summary}"


def work_unit_data(content: str, recorded: date | datetime) -> str:
    """``<content>\\n\\n_Recorded: <YYYY-MM-DD>_`` (the run's UTC date; not part of the name)."""
    return f"{content}\n\n_Recorded: {utc_date(recorded)}_"
