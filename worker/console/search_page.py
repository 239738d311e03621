"""Search memory: the store's own two rankings, each labelled — full-text ``search`` (the words)
and ``similar`` (the meaning, by the store's embeddings) — each hit with a snippet of its text
around the words of the query, the words marked, and links to the entry and its session.

The snippet is a list of ``(text, marked)`` pieces; the template escapes each piece and wraps
the marked ones in ``<mark>``, so no text from memory is ever rendered as markup."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from dsh_memory_worker.memory.store.base import StoreError
from dsh_memory_worker.worker.console.base import Console, console_of
from dsh_memory_worker.worker.console.entry_text import rendered, session_of

SEARCH_LIMIT = 50
SIMILAR_LIMIT = 10
#: Characters of text shown around the first word of the query found.
SNIPPET = 240
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Hit:
    key: str
    catalog: str
    session: str | None
    #: the hit's text in pieces, the query's words marked
    snippet: list[tuple[str, bool]]
    score: str


def query_words(query: str) -> list[str]:
    """What to mark of a query, longest first: each of its terms as typed (quotes, brackets
    and a leading ``+`` left out, so ``"sum-s-1-0-4"`` is marked whole) and each word in them;
    a term excluded with a leading ``-`` is not marked, nor is a single character (it would
    mark every digit of a date)."""
    terms: set[str] = set()
    for token in query.split():
        if token.startswith("-"):
            continue
        term = token.strip("\"'()[]{}*").lstrip("+").casefold()
        terms |= {term, *(w.casefold() for w in _WORD.findall(term))}
    return sorted((t for t in terms if len(t) > 1), key=lambda w: (-len(w), w))


def snippet(text: str, words: list[str], width: int = SNIPPET) -> list[tuple[str, bool]]:
    """About ``width`` characters of ``text`` (on one line) around the first of ``words`` found,
    cut at word boundaries with an ellipsis, split into pieces with the words marked."""
    flat = " ".join(text.split())
    pattern = (
        re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE | re.UNICODE)
        if words
        else None
    )
    first = pattern.search(flat) if pattern else None
    start = max(0, (first.start() if first else 0) - width // 3)
    end = min(len(flat), start + width)
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < (first.start() if first else end) else start
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start else end
    window = flat[start:end]
    pieces: list[tuple[str, bool]] = [("…", False)] if start > 0 else []
    at = 0
    for found in pattern.finditer(window) if pattern else ():
        if found.start() > at:
            pieces.append((window[at : found.start()], False))
        pieces.append((found.group(0), True))
        at = found.end()
    if at < len(window):
        pieces.append((window[at:], False))
    if end < len(flat):
        pieces.append(("…", False))
    return pieces


def _readable(data: str) -> str:
    """A message entry's content (not its scaffold); any other text as it is."""
    return rendered(data).content


def _search_rows(console: Console, query: str) -> dict[str, Any]:
    store = console.runtime.store(console.shelf)
    words = query_words(query)
    errors: dict[str, str] = {}
    found: dict[str, list[Hit]] = {"search": [], "similar": []}
    try:
        found["search"] = [
            Hit(h.key, h.catalog, session_of(h.key), snippet(_readable(h.content.data), words), "")
            for h in store.search(query, limit=SEARCH_LIMIT)
        ]
    except StoreError as exc:
        errors["search"] = " ".join(str(exc).split())[:300]
    try:
        found["similar"] = [
            Hit(
                h.key,
                h.catalog,
                session_of(h.key),
                snippet(_readable(h.content.data), words),
                f"distance {h.distance:.3f}",
            )
            for h in store.similar(query, limit=SIMILAR_LIMIT)
        ]
    except StoreError as exc:
        errors["similar"] = " ".join(str(exc).split())[:300]
    sessions = {h.session for hits in found.values() for h in hits if h.session}
    with console.runtime.state.read() as repos:
        known = {sid for sid in sessions if repos.sessions.get(sid) is not None}
    for name, hits in found.items():
        found[name] = [
            h if h.session in known else Hit(h.key, h.catalog, None, h.snippet, h.score)
            for h in hits
        ]
    return {"search": found["search"], "similar": found["similar"], "errors": errors}


async def search(request: Request) -> Response:
    console = console_of(request)
    query = (request.query_params.get("q") or "").strip()
    empty: dict[str, Any] = {"search": [], "similar": [], "errors": {}}
    found = await console.run(_search_rows, console, query) if query else empty
    return console.render(request, "search.html", query=query, **found)
