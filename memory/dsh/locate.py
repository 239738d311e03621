"""Find DSH sessions on disk (format doc §4.1).

Layout: ``<root>/--<project>--/<escaped session id>/session[.v<N>].jsonl[.zstd]``. The directory
names are lossy hints: the header's ``cwd`` and ``id`` are the authority.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dsh_memory_worker.memory.dsh.openlog import file_kind

#: Files a project directory may hold beside its session directories without a problem line.
_NOT_SESSIONS = (".tmp", ".lock")
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


def not_a_directory(path: Path) -> str | None:
    """Why ``path``, which exists in some form, is not a directory to list (``is a symbolic link
    loop``, ``is a regular file, not a directory``, ...); None when it is a directory or simply
    does not exist."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if exc.errno == errno.ENOENT:
            return "is a dangling symbolic link" if os.path.islink(path) else None
        return f"cannot be examined ({exc.strerror})"
    if stat.S_ISDIR(info.st_mode):
        return None
    return f"is {_kind(info.st_mode)}, not a directory"


def _kind(mode: int) -> str:
    """What a file that is not a directory is (``a regular file`` included)."""
    return "a regular file" if stat.S_ISREG(mode) else file_kind(mode)


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
    zstd only when both exist for the same generation, which DSH itself refuses); ``None`` when
    there is none or it is not a regular file (:func:`survey_sessions` says why)."""
    chosen, _reason = _choose(directory)
    return chosen


def _choose(directory: Path) -> tuple[tuple[Path, int, bool] | None, str | None]:
    """The chosen log, or ``None`` and why (``None`` too when the directory simply has no log
    yet: only ``session.lock`` / ``*.tmp``)."""
    best: tuple[int, bool, os.DirEntry[str]] | None = None
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        return None, f"cannot be listed ({exc.strerror})"
    for entry in entries:
        parsed = log_generation(entry.name)
        if parsed is None:
            continue
        generation, compressed = parsed
        key = (generation, not compressed, entry)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        return None, None
    generation, raw, entry = best
    try:
        regular = entry.is_file(follow_symlinks=False)
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return None, f"cannot be examined ({exc.strerror})"
    if not regular:
        return None, f"has {entry.name}, which is {file_kind(info.st_mode)}, not a regular log file"
    older = sorted(e.name for e in entries if e is not entry and log_generation(e.name))
    if info.st_size == 0 and any(_size(directory / name) for name in older):
        # Alone, an empty log is one DSH has just created (its header comes next); beside an
        # older generation it hides that one: the newest generation is the session's log.
        return None, (
            f"has {entry.name}, which is empty, beside {', '.join(older)}: the newest "
            "generation is the session's log; not read until it is written"
        )
    return (Path(entry.path), generation, not raw), None


def _size(path: Path) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return 0


@dataclass(frozen=True, slots=True)
class LocationProblem:
    """Something in the DSH home that is not read, and why.

    ``subject`` is the session id for a session directory, else the project directory's name
    followed by ``/``."""

    subject: str
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path} {self.reason}"


@dataclass(slots=True)
class Survey:
    """What a listing of the sessions root found: the sessions to read and what was refused."""

    sessions: list[SessionLocation] = field(default_factory=list)
    problems: list[LocationProblem] = field(default_factory=list)


def _followed_dir(
    entry: os.DirEntry[str], real_root: str, *, sessions: bool = False
) -> tuple[bool, str | None]:
    """Whether ``entry`` is a directory to walk into, and why not when that is a problem.

    A symbolic link is followed only when it resolves to a directory inside the sessions root;
    one pointing outside, a dangling one and a loop are problems. A plain file is ignored in the
    root; in a project directory (``sessions``), where every entry is a session directory, it is
    a problem unless hidden (``.DS_Store``) or one of DSH's temporary files (``*.tmp``,
    ``*.lock``)."""
    try:
        if not entry.is_symlink():
            if entry.is_dir(follow_symlinks=False):
                return True, None
            if not sessions or entry.name.startswith(".") or entry.name.endswith(_NOT_SESSIONS):
                return False, None
            kind = _kind(entry.stat(follow_symlinks=False).st_mode)
            return False, f"is {kind}, not a session directory; not read"
    except OSError as exc:
        return False, f"cannot be examined ({exc.strerror})"
    try:
        os.stat(entry.path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False, "is a symbolic link loop; not followed"
        return False, f"is a dangling symbolic link ({exc.strerror}); not followed"
    target = os.path.realpath(entry.path)
    if os.path.commonpath([real_root, target]) != real_root:
        return False, f"is a symbolic link to {target}, outside the DSH home; not followed"
    return os.path.isdir(target), None


def survey_sessions(root: Path) -> Survey:
    """Every session under a sessions root, sorted by project then session directory, and the
    entries that cannot be read (see :class:`LocationProblem`).

    A root that is not a directory yields nothing. Directories without a canonical log file
    (only ``session.lock`` / ``*.tmp``) are skipped without a problem."""
    survey = Survey()
    if not root.is_dir():
        return survey
    real_root = os.path.realpath(root)
    try:
        projects = _subdirectories(root, real_root)
    except OSError as exc:
        survey.problems.append(LocationProblem("/", root, f"cannot be listed ({exc.strerror})"))
        return survey
    for project, why in projects:
        subject = f"{project.name}/"
        if why is not None:
            survey.problems.append(LocationProblem(subject, Path(project.path), why))
            continue
        try:
            children = _subdirectories(Path(project.path), real_root, sessions=True)
        except OSError as exc:
            reason = f"cannot be listed ({exc.strerror})"
            survey.problems.append(LocationProblem(subject, Path(project.path), reason))
            continue
        for session, why in children:
            session_id = decode_segment(session.name)
            chosen, why = (None, why) if why is not None else _choose(Path(session.path))
            if why is not None:
                survey.problems.append(LocationProblem(session_id, Path(session.path), why))
            if chosen is None:
                continue
            path, generation, compressed = chosen
            survey.sessions.append(
                SessionLocation(
                    path=path,
                    directory=Path(session.path),
                    project_dir=Path(project.path),
                    session_id=session_id,
                    generation=generation,
                    compressed=compressed,
                )
            )
    return survey


def _subdirectories(
    directory: Path, real_root: str, *, sessions: bool = False
) -> list[tuple[os.DirEntry[str], str | None]]:
    """The entries of ``directory`` that are directories to walk (problem ``None``) or refused
    ones (with the problem), by name; ``sessions``: ``directory`` is a project directory.
    Raises ``OSError`` when it cannot be listed."""
    found = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            walk, why = _followed_dir(entry, real_root, sessions=sessions)
            if walk or why is not None:
                found.append((entry, why))
    return found


def listed_paths(root: Path) -> list[str]:
    """Every path whose metadata decides what :func:`survey_sessions` finds and reads, by its
    own rule (:func:`_subdirectories`, so nothing it reads is left out and no name is special):
    the root, each project and session directory it walks or refuses, and every entry of each
    session directory walked (the logs, a new generation, the lock). The at-rest fingerprint
    (:mod:`worker.at_rest`) is taken over these paths."""
    found = [str(root)]
    if not root.is_dir():
        return found
    real_root = os.path.realpath(root)
    with contextlib.suppress(OSError):
        for project, why in _subdirectories(root, real_root):
            found.append(project.path)
            if why is not None:
                continue
            try:
                sessions = _subdirectories(Path(project.path), real_root)
            except OSError:
                continue
            for session, why in sessions:
                found.append(session.path)
                if why is None:
                    with contextlib.suppress(OSError):
                        found += sorted(e.path for e in os.scandir(session.path))
    return found


def discover_sessions(root: Path) -> list[SessionLocation]:
    """Every readable session under a sessions root (:func:`survey_sessions` without the
    problems)."""
    return survey_sessions(root).sessions


#: A directory listed less than this long after its last change is listed again next time: a
#: change in the same timestamp tick as the listing would not move the mtime (the "racy" case).
_RACY_S = 2.0


@dataclass(slots=True)
class _Listed:
    key: tuple[int, int, int]  # (st_dev, st_ino, st_mtime_ns) of the directory when listed
    value: object


class CachedSurvey:
    """:func:`survey_sessions` with each directory's listing kept until its mtime changes.

    A directory's entries change only when one is created, removed or renamed, which moves its
    mtime; a log growing does not. So a poll ``stat``\\ s the root, each project and each session
    directory and lists only those whose ``(device, inode, mtime)`` moved (or that changed too
    recently to trust the mtime). ``stale`` marks directories to list again regardless (a
    file-system notification named them); ``trust`` skips the ``stat`` of every directory not
    marked (notifications are live: nothing else changed). What a symbolic link points to is not
    part of the key: :meth:`forget` (the periodic safety scan) drops everything."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, _Listed] = {}

    def forget(self) -> None:
        self._cache.clear()

    def survey(
        self, *, stale: set[str] | frozenset[str] = frozenset(), trust: bool = False
    ) -> Survey:
        """The same result as ``survey_sessions(self.root)``, from the cache where it holds."""
        survey = Survey()
        root = str(self.root)
        if not self.root.is_dir():
            self._cache.clear()
            return survey
        real_root = os.path.realpath(root)
        try:
            projects = self._listed(
                root, stale, trust, functools.partial(_subdirectories, self.root, real_root)
            )
        except OSError as exc:
            survey.problems.append(
                LocationProblem("/", self.root, f"cannot be listed ({exc.strerror})")
            )
            return survey
        for project_name, project_path, why in projects:
            subject = f"{project_name}/"
            if why is not None:
                survey.problems.append(LocationProblem(subject, Path(project_path), why))
                continue
            try:
                children = self._listed(
                    project_path,
                    stale,
                    trust,
                    functools.partial(
                        _subdirectories, Path(project_path), real_root, sessions=True
                    ),
                )
            except OSError as exc:
                reason = f"cannot be listed ({exc.strerror})"
                survey.problems.append(LocationProblem(subject, Path(project_path), reason))
                continue
            for session_name, session_path, why in children:
                session_id = decode_segment(session_name)
                if why is None:
                    location, why = self._session(
                        session_path, session_id, project_path, stale, trust
                    )
                else:
                    location = None
                if why is not None:
                    survey.problems.append(LocationProblem(session_id, Path(session_path), why))
                if location is not None:
                    survey.sessions.append(location)
        return survey

    def _key(self, path: str) -> tuple[int, int, int] | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return (info.st_dev, info.st_ino, info.st_mtime_ns)

    def _get(
        self, path: str, stale: set[str] | frozenset[str], trust: bool
    ) -> tuple[_Listed | None, tuple[int, int, int] | None]:
        """The cached listing of ``path`` when it still holds, and the key to store a new one
        under (``None``: do not cache)."""
        cached = self._cache.get(path)
        if path in stale:
            cached = None
        elif trust and cached is not None:
            return cached, None
        key = self._key(path)
        if cached is not None and key is not None and cached.key == key:
            return cached, None
        if key is not None and time.time() - key[2] / 1e9 < _RACY_S:
            key = None  # changed a moment ago: list it again next time too
        return None, key

    def _listed(
        self,
        path: str,
        stale: set[str] | frozenset[str],
        trust: bool,
        walk: Callable[[], list[tuple[os.DirEntry[str], str | None]]],
    ) -> list[tuple[str, str, str | None]]:
        cached, key = self._get(path, stale, trust)
        if cached is not None:
            return cached.value  # type: ignore[return-value]
        self._cache.pop(path, None)
        found = [(entry.name, entry.path, why) for entry, why in walk()]
        if key is not None:
            self._cache[path] = _Listed(key, found)
        return found

    def _session(
        self,
        path: str,
        session_id: str,
        project_path: str,
        stale: set[str] | frozenset[str],
        trust: bool,
    ) -> tuple[SessionLocation | None, str | None]:
        cached, key = self._get(path, stale, trust)
        if cached is not None:
            return cached.value  # type: ignore[return-value]
        self._cache.pop(path, None)
        chosen, why = _choose(Path(path))
        location = None
        if chosen is not None:
            log_path, generation, compressed = chosen
            location = SessionLocation(
                path=log_path,
                directory=Path(path),
                project_dir=Path(project_path),
                session_id=session_id,
                generation=generation,
                compressed=compressed,
            )
        if key is not None and why is None:  # a problem is looked at again every time
            self._cache[path] = _Listed(key, (location, why))
        return location, why
