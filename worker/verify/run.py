"""``verify-forgetting``: re-derive from the logs what must be gone and search every place the
worker writes for it (:mod:`worker.verify.sources`, :mod:`worker.verify.store_scan`,
:mod:`worker.verify.state_scan`, :mod:`worker.verify.matcher`).

Places searched: each entry and each statement read back through the adapter, the full-text
index (``search``, once for all phrases), each file of a hypatia-lite shelf (``hypatia.sqlite``,
``-wal``, ``-shm`` and any other file in the shelf's directory), each text column of the state
database, and on SQLite each of its files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hypatia_lite import shelves
from worker.jobs.runtime import Runtime
from worker.settings import Settings
from worker.verify.matcher import ByteMatcher, Leak
from worker.verify.sources import Gone, Sources, collect
from worker.verify.state_scan import scan_state, state_files
from worker.verify.store_scan import distinctive_terms, scan_store

LITE_BINARY = "hypatia-lite"


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
    #: why the raw bytes of the shelf were not searched ('' when they were)
    bytes_skipped: str = ""

    @property
    def place_count(self) -> int:
        return self.entries + self.statements + len(self.places)

    def summary(self) -> str:
        return (f"{len(self.leaks)} leaks in {self.sources.withdrawn_count} withdrawn messages and "
                f"{len(self.sources.forgotten)} forgotten sessions "
                f"({self.place_count} places searched)")

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
            "messages": [{"session_id": m.session_id, "name": m.name, "seq": m.seq,
                          "why": m.why, "phrases": list(m.fragments.phrases),
                          "terms": m.fragments.byte_terms()} for m in s.messages],
            "names_only": [m.name for m in s.too_short],
            "forgotten_without_log": s.forgotten_without_log,
            "unreadable_logs": s.unreadable,
            "bytes_skipped": self.bytes_skipped or None,
        }


def shelf_directory(settings: Settings, shelf: str) -> Path | None:
    """The directory of ``shelf`` when the store is hypatia-lite (in process, or its CLI / MCP
    server as the store binary); ``None`` for any other store."""
    if settings.store_transport != "lite" and Path(settings.store_binary).name != LITE_BINARY:
        return None
    home = shelves.lite_home(settings.lite_home)
    if shelves.is_url(shelves.registry(home).get(shelf, "")):
        return None  # a PostgreSQL shelf has no files here to scan
    return shelves.resolve(home, shelf)


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
        report.bytes_skipped = (f"the store binary {settings.store_binary!r} is not "
                                f"{LITE_BINARY}: its files are not searched")
    else:
        gone = [_with_terms(m, distinctive_terms(
            store, m, found.leaked_keys.get((m.session_id, m.name), ()))) for m in sources.messages]
        _scan_files(report, ByteMatcher(gone, terms=True), _files(directory), meter)
    state = scan_state(runtime.state, sources)
    report.leaks += state.leaks
    report.places += [f"state {column}" for column in state.columns]
    _scan_files(report, ByteMatcher(sources.messages, terms=False),
                state_files(runtime.state.url), meter)
    return report


def _with_terms(message: Gone, terms: list[str]) -> Gone:
    kept = tuple(group for group in message.fragments.terms if group[0] in terms)
    return dataclasses.replace(message, fragments=dataclasses.replace(message.fragments,
                                                                      terms=kept))


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
            report.leaks.append(Leak(f"file {path}", "bytes", message.session_id, message.name,
                                     message.seq, message.why, fragment))
