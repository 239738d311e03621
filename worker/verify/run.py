"""``verify-forgetting``: re-derive from the logs what must be gone and search every place the
worker writes for it (:mod:`worker.verify.sources`, :mod:`worker.verify.store_scan`,
:mod:`worker.verify.state_scan`, :mod:`worker.verify.matcher`).

Places searched: each entry and each statement read back through the adapter, the full-text
index (``search``, once for all phrases), each file of a hypatia-lite shelf (``hypatia.sqlite``,
``-wal``, ``-shm`` and any other file in the shelf's directory), each text column of the state
database, and on SQLite each of its files. A PostgreSQL shelf has no files here: its tables are
what the adapter reads, and what MVCC and the WAL may keep is said in one line
(:func:`bytes_note`).

A phrase found where an entry's (or a state row's) own legitimate sources explain it is not a
leak (:mod:`worker.verify.provenance`); such a phrase is also left out of the raw-byte scans,
since a byte cannot tell whose text it is. Every other fragment of a withdrawn or forgotten
message is searched in every byte.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.settings import Settings
from dsh_memory_worker.worker.verify.matcher import ByteMatcher, Leak
from dsh_memory_worker.worker.verify.provenance import Provenance
from dsh_memory_worker.worker.verify.sources import Gone, Sources, collect
from dsh_memory_worker.worker.verify.state_scan import Explain, scan_state, state_files
from dsh_memory_worker.worker.verify.store_scan import distinctive_terms, scan_store
from hypatia_lite import shelves
from hypatia_lite.db import DB_FILE
from hypatia_lite.pg.url import redact as redact_url

LITE_BINARY = "hypatia-lite"
#: the state column that holds a session node's text (explained by the node's own source)
TITLE_COLUMN = "sessions.title_text"
#: why a fragment in raw bytes is not explained
NOT_HELD = "no live entry or state value legitimately holds it"


class Meter(Protocol):
    """Where a run reports its progress (a Rich progress bar, or nothing)."""

    def phase(self, description: str, total: int | None) -> None: ...

    def advance(self, amount: int) -> None: ...


class NoMeter:
    def phase(self, description: str, total: int | None) -> None:
        pass

    def advance(self, amount: int) -> None:
        pass


@dataclass(slots=True)
class Report:
    shelf: str
    sources: Sources
    leaks: list[Leak] = field(default_factory=list)
    places: list[str] = field(default_factory=list)
    entries: int = 0
    statements: int = 0
    #: why the raw bytes of the shelf were not searched, or what was searched instead of them
    #: ('' when they were searched)
    bytes_skipped: str = ""

    @property
    def place_count(self) -> int:
        return self.entries + self.statements + len(self.places)

    def summary(self) -> str:
        withdrawn, forgotten = self.sources.withdrawn_count, len(self.sources.forgotten)
        return (
            f"{len(self.leaks)} leaks in {withdrawn} withdrawn "
            f"{'message' if withdrawn == 1 else 'messages'} and "
            f"{forgotten} forgotten {'session' if forgotten == 1 else 'sessions'} "
            f"({self.place_count} places searched)"
        )

    def as_dict(self) -> dict[str, Any]:
        s = self.sources
        return {
            "shelf": self.shelf,
            "withdrawn_messages": s.withdrawn_count,
            "forgotten_sessions": len(s.forgotten),
            "places_searched": self.place_count,
            "entries_searched": self.entries,
            "statements_searched": self.statements,
            "places": self.places,
            "leaks": [leak.as_dict() for leak in self.leaks],
            "messages": [
                {
                    "session_id": m.session_id,
                    "name": m.name,
                    "seq": m.seq,
                    "why": m.why,
                    "phrases": list(m.fragments.phrases),
                    "terms": m.fragments.byte_terms(),
                }
                for m in s.messages
            ],
            "names_only": [m.name for m in s.too_short],
            "forgotten_without_log": s.forgotten_without_log,
            "unreadable_logs": s.unreadable,
            "bytes_skipped": self.bytes_skipped or None,
        }


def is_lite(settings: Settings) -> bool:
    """Whether the store is hypatia-lite (in process, or its CLI / MCP server as the binary)."""
    return settings.store_transport == "lite" or Path(settings.store_binary).name == LITE_BINARY


def shelf_url(settings: Settings, shelf: str) -> str | None:
    """The PostgreSQL URL of a hypatia-lite ``shelf`` (``None``: a directory shelf)."""
    if shelf == settings.store_shelf and settings.store_shelf_url:
        return settings.store_shelf_url
    location = shelves.registry(shelves.lite_home(settings.lite_home)).get(shelf, "")
    return location if shelves.is_url(location) else None


def shelf_directory(settings: Settings, shelf: str) -> Path | None:
    """The directory of ``shelf`` when the store is hypatia-lite and the shelf is a directory;
    ``None`` for any other store and for a PostgreSQL shelf."""
    if not is_lite(settings) or shelf_url(settings, shelf) is not None:
        return None
    return shelves.resolve(shelves.lite_home(settings.lite_home), shelf)


def bytes_note(settings: Settings, shelf: str) -> str:
    """Why the shelf's raw bytes were not searched, and what was searched instead."""
    if not is_lite(settings):
        return (
            f"the store binary {settings.store_binary!r} is not {LITE_BINARY}: its files "
            "are not searched (only what its protocol returns)"
        )
    url = shelf_url(settings, shelf) or ""
    return (
        f"shelf {shelf!r} is a PostgreSQL shelf ({redact_url(url)}): it has no files here, "
        "so its tables (knowledge, statement, docs) were searched through queries — every "
        "row and the full-text index. Dead row versions (MVCC) are not visible to a query, "
        "and PostgreSQL's WAL (pg_wal), archives and backups may hold deleted text until they "
        "are recycled; hypatia-lite rewrites the three tables with VACUUM FULL after every "
        "delete or update (owed and retried when blocked), the WAL is the database's "
        "retention"
    )


def shelf_schema_text(directory: Path) -> str:
    """The lowercased text the shelf's file holds for its own sake: the schema (``sqlite_master``:
    table, column, index and trigger definitions) and the ``meta`` rows. A term found there (a
    withdrawn "triggered" stems to ``trigger``) is in the file for that reason."""
    path = directory / DB_FILE
    if not path.is_file():
        return ""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return ""
    try:
        rows = conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        with contextlib.suppress(sqlite3.Error):
            rows += conn.execute("SELECT k || ' ' || v FROM meta").fetchall()
    except sqlite3.Error:
        return ""
    finally:
        conn.close()
    return "\n".join(str(r[0]) for r in rows).lower()


def lite_store_absent(settings: Settings) -> bool:
    """The store is hypatia-lite in a home no shelf was registered in yet: nothing was written
    (looking creates nothing, unlike :func:`shelf_directory`)."""
    if settings.store_transport != "lite" or settings.store_shelf_url:
        return False
    return not (shelves.lite_home(settings.lite_home) / shelves.REGISTRY_FILE).exists()


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def verify(runtime: Runtime, shelf: str, meter: Meter | None = None) -> Report:
    """Verify that nothing withdrawn or forgotten is left in ``shelf`` or the state database."""
    meter = meter or NoMeter()
    settings = runtime.settings
    with runtime.state.read() as repos:
        sessions = repos.sessions.list(include_forgotten=True)
    meter.phase("reading logs", len(sessions))
    sources = collect(settings, sessions, runtime.segments)
    report = Report(shelf, sources)
    store = runtime.store(shelf)
    meter.phase("searching the store", None)
    found = scan_store(store, sources, meter.advance)
    report.leaks += found.leaks
    report.entries, report.statements = found.entries, found.statements
    if found.searches:
        report.places.append("full-text search")
    directory = shelf_directory(settings, shelf)
    if directory is None:
        report.bytes_skipped = bytes_note(settings, shelf)
    else:
        schema = shelf_schema_text(directory)
        gone = [
            _in_bytes(
                m,
                found.held,
                distinctive_terms(store, m, found.leaked_keys.get((m.session_id, m.name), ())),
                schema,
            )
            for m in sources.messages
        ]
        _scan_files(report, ByteMatcher(gone, terms=True), _files(directory), meter)
    state = scan_state(runtime.state, sources, _state_explainer(sources))
    report.leaks += state.leaks
    report.places += [f"state {column}" for column in state.columns]
    held = found.held | state.held
    _scan_files(
        report,
        ByteMatcher([_in_bytes(m, held) for m in sources.messages], terms=False),
        state_files(runtime.state.url),
        meter,
    )
    return report


def _state_explainer(sources: Sources) -> Explain:
    """A state row's own source: ``sessions.title_text`` holds its session node's text; no other
    column is written from a kept message."""
    provenance = Provenance(sources.kept, ())

    def explain(column: str, key: dict[str, object], phrase: str) -> str | None:
        if column == TITLE_COLUMN:
            return provenance.why_not(f"session-{key.get('session_id')}", phrase)
        return "no column but sessions.title_text is written from a kept message"

    return explain


def _in_bytes(
    message: Gone, held: set[str], terms: list[str] | None = None, schema: str = ""
) -> Gone:
    """``message`` as a byte scan looks for it: without the phrases some live entry or state row
    legitimately holds, and (``terms``) only those terms, none that ``schema`` holds."""
    phrases = tuple(p for p in message.fragments.phrases if p not in held)
    kept = (
        message.fragments.terms
        if terms is None
        else tuple(
            group
            for group in message.fragments.terms
            if group[0] in terms and not any(t in schema for t in group)
        )
    )
    return dataclasses.replace(
        message, fragments=dataclasses.replace(message.fragments, phrases=phrases, terms=kept)
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # a -wal or -journal removed meanwhile: nothing left to read
        return 0


def _scan_files(report: Report, matcher: ByteMatcher, paths: list[Path], meter: Meter) -> None:
    meter.phase("searching file bytes", sum(_size(p) for p in paths))
    for path in paths:
        try:
            hits = matcher.scan(path, meter.advance)
        except FileNotFoundError:
            continue
        report.places.append(f"file {path}")
        for message, fragment in hits:
            report.leaks.append(
                Leak(
                    f"file {path}",
                    "bytes",
                    message.session_id,
                    message.name,
                    message.seq,
                    message.why,
                    fragment,
                    NOT_HELD,
                )
            )
