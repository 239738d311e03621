"""An entry's text as a reader wants it: a message entry's ``## Role`` / ``## Timestamp`` /
``## Turn`` / ``## Content`` / ``## Tool Calls`` scaffold (:func:`memory.entries.render_message`)
split into its fields, so a page shows who said what when, and the content in full; any other
entry (a summary, an archive, a work unit, the session node) as its text. The raw stored form
stays one click away on the page."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Rendered:
    """What a page shows of one entry's text."""

    #: the text to read first: a message's ``## Content``, else the whole text
    content: str
    role: str = ""
    time: str = ""
    turn: str = ""
    #: any other sections (``Tool Calls``, …) in order
    extra: list[tuple[str, str]] = field(default_factory=list)


def sections(markdown: str) -> list[tuple[str, str]]:
    """``[(heading, body), …]`` of a text made of ``## heading`` lines and their bodies; ``[]``
    when the text does not start with one."""
    marks = list(_HEADING.finditer(markdown))
    if not marks or marks[0].start() != 0:
        return []
    found = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(markdown)
        found.append((mark.group(1).strip(), markdown[mark.end() : end].strip("\n")))
    return found


def rendered(markdown: str) -> Rendered:
    """A message entry's fields; any other text as it is."""
    parts = sections(markdown)
    names = [name for name, _ in parts]
    if not {"Role", "Content"} <= set(names):
        return Rendered(markdown)
    # The content is everything from ``## Content`` up to ``## Tool Calls`` (a message's text
    # may hold lines that look like headings).
    content = markdown.split("## Content\n", 1)[1]
    content, ledger_mark, ledger = content.partition("\n\n## Tool Calls\n")
    values = dict(parts)
    return Rendered(
        content,
        role=values.get("Role", ""),
        time=values.get("Timestamp", ""),
        turn=values.get("Turn", ""),
        extra=[("Tool Calls", ledger)] if ledger_mark else [],
    )


def session_of(name: str, known: set[str] | None = None) -> str | None:
    """The session an entry name belongs to (``msg-<sid>-<N>``, ``session-<sid>``,
    ``sum-<sid>-<from>-<to>``), when it names one; archives and work units name none."""
    candidates: list[str] = []
    if name.startswith("session-"):
        candidates.append(name[len("session-") :])
    if name.startswith("msg-"):
        head, _, ordinal = name[4:].rpartition("-")
        if ordinal.isdigit():
            candidates.append(head)
    if name.startswith("sum-"):
        head, _, end = name[4:].rpartition("-")
        head, _, start = head.rpartition("-")
        if end.isdigit() and start.isdigit():
            candidates.append(head)
    for sid in candidates:
        if sid and (known is None or sid in known):
            return sid
    return None
