"""The shelf registry: ``<home>/shelves.json`` = ``{"shelves": {name: location}}``.

A location is a shelf directory's absolute path (a SQLite shelf) or a PostgreSQL URL
(``postgresql://…``, a PostgreSQL shelf: :mod:`hypatia_lite.pg`); ``connect`` takes either.

hypatia-lite's home is its own (``~/.hypatia-lite``, or ``$HYPATIA_LITE_HOME``) so it never
touches a real Hypatia's ``~/.hypatia``. Every change to the registry happens under an exclusive
lock of ``<home>/shelves.lock`` (``filelock``: on Unix an ``flock`` of that file, as the earlier
hand-written lock took, so old and new processes exclude each other; the file is never removed)
and is written atomically (temp file + rename), so two processes creating ``default`` or
connecting shelves at once both succeed and lose nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from hypatia_lite.pg import url as pg_url
from hypatia_lite.protocol import FatalStoreError

DEFAULT_SHELF = "default"
HOME_ENV = "HYPATIA_LITE_HOME"
REGISTRY_FILE = "shelves.json"
_LOCK_FILE = "shelves.lock"


class ShelfError(FatalStoreError):
    """A shelf is unknown, already connected, or cannot be opened."""


def lite_home(home: Path | None = None) -> Path:
    """The directory holding the registry and the default shelf."""
    if home is not None:
        return Path(home).expanduser().absolute()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser().absolute()
    return Path.home() / ".hypatia-lite"


def not_connected(name: str) -> ShelfError:
    return ShelfError(f"shelf error: shelf '{name}' is not connected")


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    # preserve_lock_file: the path stays (a process that unlinked it would lock a new inode
    # while an older process holds the old one).
    with FileLock(home / _LOCK_FILE, preserve_lock_file=True):
        yield


def _read(home: Path) -> dict[str, str]:
    try:
        raw = json.loads((home / REGISTRY_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise ShelfError(
            f"shelf error: cannot read the registry {home / REGISTRY_FILE}: {err}"
        ) from err
    shelves = raw.get("shelves") if isinstance(raw, dict) else None
    if not isinstance(shelves, dict):
        return {}
    return {str(k): str(v) for k, v in shelves.items()}


def _write(home: Path, shelves: dict[str, str]) -> None:
    text = json.dumps({"shelves": dict(sorted(shelves.items()))}, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".shelves.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, home / REGISTRY_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def registry(home: Path) -> dict[str, str]:
    """All registered shelves (name → path); registers ``default`` first if it is missing."""
    shelves = _read(home)
    if DEFAULT_SHELF in shelves:
        return shelves
    with _locked(home):
        shelves = _read(home)
        if DEFAULT_SHELF not in shelves:
            default_dir = home / DEFAULT_SHELF
            default_dir.mkdir(parents=True, exist_ok=True)
            shelves[DEFAULT_SHELF] = str(default_dir)
            _write(home, shelves)
    return shelves


def is_url(location: str | Path) -> bool:
    """True for a PostgreSQL shelf location."""
    return str(location).startswith(("postgresql://", "postgres://"))


def locate(home: Path, name: str) -> str:
    """The location of a registered shelf (directory or URL); ``ShelfError`` when unknown."""
    location = registry(home).get(name)
    if location is None:
        raise not_connected(name)
    return location


def resolve(home: Path, name: str) -> Path:
    """The directory of a registered SQLite shelf; ``ShelfError`` when it is not connected or
    is a PostgreSQL shelf (which has no directory)."""
    location = locate(home, name)
    if is_url(location):
        raise ShelfError(
            f"shelf error: shelf '{name}' is stored in PostgreSQL "
            f"({pg_url.redact(location)}), not in a directory"
        )
    return Path(location)


def ensure(home: Path, name: str, url: str) -> None:
    """Make shelf ``name`` the PostgreSQL shelf at ``url``: registered if it is not, accepted
    if it already is; ``ShelfError`` when ``name`` is registered elsewhere.

    ``default`` is the one name hypatia-lite registers by itself (a local directory, on first
    use): a URL takes it over while that directory holds no entry or statement, so a worker
    configured with only the URL writes the shared shelf. A local ``default`` that holds data is
    refused, never hidden: the error names the fix."""
    if _read(home).get(name) == url:
        return
    try:
        pg_url.split(url)
    except ValueError as err:
        raise ShelfError(f"shelf error: {err}") from err
    if name != DEFAULT_SHELF:
        registry(home)  # a home always has its local ``default`` beside the other shelves
    with _locked(home):
        shelves = _read(home)
        found = shelves.get(name)
        if found == url:
            return
        if found is not None:
            _refuse_taken(name, found, url)
        _add_url(home, shelves, name, url)


def _refuse_taken(name: str, found: str, url: str) -> None:
    """Raise unless ``found`` is a ``default`` directory holding nothing (the URL may take it)."""
    held = None if is_url(found) or name != DEFAULT_SHELF else _rows_in(Path(found))
    if held == 0:
        return
    if held is not None:
        raise ShelfError(
            f"shelf error: shelf '{name}' is registered as {found}, a local shelf holding "
            f"{held} {'entry' if held == 1 else 'entries'}, not as {pg_url.redact(url)}; "
            f"choose another shelf name for the URL, or disconnect the local one "
            f"(hypatia-lite disconnect {name})"
        )
    shown = pg_url.redact(found) if is_url(found) else found
    raise ShelfError(
        f"shelf error: shelf '{name}' is registered as {shown}, not as "
        f"{pg_url.redact(url)}; disconnect it or choose another shelf name"
    )


def _rows_in(directory: Path) -> int:
    """Knowledge entries plus statements in the SQLite shelf at ``directory`` (0 when it has
    no database yet), read-only."""
    from hypatia_lite.db import DB_FILE
    from hypatia_lite.sqlitelib import sqlite3

    path = directory / DB_FILE
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            return sum(
                int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                for table in ("knowledge", "statement")
                if table in tables
            )
    except sqlite3.Error as err:
        raise ShelfError(f"shelf error: cannot read the local shelf {directory}: {err}") from err


def _connect_url(home: Path, url: str, name: str | None) -> str:
    try:
        pg_url.split(url)
        shelf = name if name else pg_url.default_name(url)
    except ValueError as err:
        raise ShelfError(f"shelf error: {err}") from err
    registry(home)
    with _locked(home):
        shelves = _read(home)
        if shelf in shelves:
            raise ShelfError(f"shelf error: shelf '{shelf}' is already connected")
        _add_url(home, shelves, shelf, url)
    return shelf


def _add_url(home: Path, shelves: dict[str, str], name: str, url: str) -> None:
    """Register ``url`` as ``name`` (under the registry lock), unless another name has it."""
    for other, location in shelves.items():
        if location == url and other != name:
            raise ShelfError(f"shelf error: {pg_url.redact(url)} is already connected as '{other}'")
    shelves[name] = url
    _write(home, shelves)


def connect(home: Path, directory: Path | str, name: str | None = None) -> str:
    """Register ``directory`` (created if needed) or a PostgreSQL URL as a shelf; returns the
    shelf name."""
    if is_url(directory):
        return _connect_url(home, str(directory), name)
    target = Path(directory).expanduser().absolute()
    shelf = name if name else (target.name or DEFAULT_SHELF)
    registry(home)
    with _locked(home):
        shelves = _read(home)
        if shelf in shelves:
            raise ShelfError(f"shelf error: shelf '{shelf}' is already connected")
        for other, path in shelves.items():
            if Path(path) == target:
                raise ShelfError(
                    f"shelf error: directory {target} is already connected as '{other}'"
                )
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ShelfError(f"shelf error: cannot create {target}: {err}") from err
        shelves[shelf] = str(target)
        _write(home, shelves)
    return shelf


def disconnect(home: Path, name: str) -> None:
    """Unregister a shelf (its files stay on disk)."""
    registry(home)
    with _locked(home):
        shelves = _read(home)
        if name not in shelves:
            raise not_connected(name)
        del shelves[name]
        _write(home, shelves)


def listing(home: Path) -> list[tuple[str, str, bool]]:
    """``(name, location, connected)`` for every registered shelf, sorted by name (a URL
    without its password; a PostgreSQL shelf counts as connected: it is not probed)."""
    return [
        (name, pg_url.redact(path), True) if is_url(path) else (name, path, Path(path).is_dir())
        for name, path in sorted(registry(home).items())
    ]
