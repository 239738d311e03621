"""Find DSH sessions on disk (format doc §4.1).

Layout: ``<root>/--<project>--/<escaped session id>/session[.v<N>].jsonl[.zstd]``. The directory
names are lossy hints: the header's ``cwd`` and ``id`` are the authority.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_GENERATION = re.compile(r"^session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?$")
_ESCAPE = re.compile(r"~([0-9A-Fa-f]{4})")


@dataclass(frozen=True, slots=True)
class SessionLocation:
    """One session directory and the log file chosen in it (highest canonical generation)."""

    path: Path
    directory: Path
    project_dir: Path
    session_id: str
    generation: int
    compressed: bool


def dsh_sessions_root(dsh_home: str | None = None) -> Path:
    """``$DSH_HOME/sessions``; a blank or missing ``DSH_HOME`` means ``~/.dsh``."""
    home = dsh_home if dsh_home is not None else os.environ.get("DSH_HOME", "")
    if not home.strip():
        return Path.home() / ".dsh" / "sessions"
    return Path(home).expanduser() / "sessions"


def decode_segment(name: str) -> str:
    """Undo DSH's ``encodeSegment``: ``~XXXX`` → the UTF-16 code unit ``XXXX``."""
    if "~" not in name:
        return name
    units: list[int] = []
    i = 0
    while i < len(name):
        match = _ESCAPE.match(name, i)
        if match:
            units.append(int(match.group(1), 16))
            i = match.end()
        else:
            units.extend(_utf16_units(name[i]))
            i += 1
    raw = b"".join(unit.to_bytes(2, "little") for unit in units)
    return raw.decode("utf-16-le", errors="replace")


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[k : k + 2], "little") for k in range(0, len(data), 2)]


def log_generation(name: str) -> tuple[int, bool] | None:
    """``(generation, compressed)`` for a canonical log file name, else ``None``."""
    match = _GENERATION.match(name)
    if match is None:
        return None
    return (int(match.group(1)) if match.group(1) else 0, match.group(2) is not None)


def choose_log(directory: Path) -> tuple[Path, int, bool] | None:
    """The numerically highest canonical generation in a session directory (raw preferred over
    zstd only when both exist for the same generation, which DSH itself refuses)."""
    best: tuple[int, bool, Path] | None = None
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        parsed = log_generation(entry.name)
        if parsed is None:
            continue
        try:
            if not entry.is_file():
                continue
        except OSError:
            continue
        generation, compressed = parsed
        key = (generation, not compressed, Path(entry.path))
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        return None
    return best[2], best[0], not best[1]


def discover_sessions(root: Path) -> list[SessionLocation]:
    """Every session under a sessions root, sorted by project then session directory.

    A root that is not a directory yields ``[]``. Directories without a canonical log file
    (only ``session.lock`` / ``*.tmp``) are skipped.
    """
    found: list[SessionLocation] = []
    if not root.is_dir():
        return found
    try:
        projects = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return found
    for project in projects:
        try:
            sessions = sorted(s for s in project.iterdir() if s.is_dir())
        except OSError:
            continue
        for directory in sessions:
            chosen = choose_log(directory)
            if chosen is None:
                continue
            path, generation, compressed = chosen
            found.append(
                SessionLocation(
                    path=path,
                    directory=directory,
                    project_dir=project,
                    session_id=decode_segment(directory.name),
                    generation=generation,
                    compressed=compressed,
                )
            )
    return found
