"""The at-rest record: what a command may skip when nothing it reads has changed.

A ``run --once`` from cron or a DSH hook usually finds nothing new, yet deciding that took the
whole runtime (pydantic settings, SQLAlchemy, the store, the jobs: about a second of imports). This
module decides it from the environment and file metadata alone, importing none of that.

The *inputs key* names a configuration without building it: a digest of the environment, the
working directory, the command-line overrides and the config file's path — everything
:func:`dsh_memory_worker.worker.settings.load_settings` reads, so equal keys mean equal settings.
The record of a
key lives in ``$XDG_CACHE_HOME/dsh-memory-worker/at-rest/<key>.json`` (``~/.cache`` by default;
mode 0600; the most recent :data:`KEEP_RECORDS` are kept).

The *fingerprint* is the ``stat`` (mode, size, mtime, ctime, inode, device) of every file a run
reads or that could change what it does: the state database (and its ``-wal`` / ``-journal``),
the sessions root, its project and session directories and every file in a session directory,
listed by the very function that decides what the full run finds
(:func:`memory.dsh.locate.listed_paths`, so a session the full run reads is never outside the
fingerprint, whatever its name), every file of the hypatia-lite home (shelves, registry), the
config file, and every source file of the packages a run executes (:data:`CODE_PACKAGES`,
wherever each is installed: a code upgrade, a new migration; their ``__pycache__`` directories
are left out).

A record says "a full ``run --once`` over exactly this fingerprint changed no file and did
nothing" (its summary line kept), or "``status`` over exactly this fingerprint showed these
figures". It is written only when

* the fingerprint taken before the full command equals the one taken after it (the command
  changed nothing, and nothing else did meanwhile), and
* every timestamp in it is more than :data:`SETTLE_NS` older than the moment the first
  fingerprint was taken. File timestamps come from a coarse clock (a few milliseconds); a file
  changed later gets a later timestamp than any recorded one, so a change is never hidden by a
  tick that did not move.

A later command with the same key and fingerprint may therefore give the recorded answer: the
full command would read the same bytes, under the same code and settings, and do the same
nothing. Anything the fast path cannot vouch for takes the full path: a state database that is
not a SQLite file, log shipping, a store other than hypatia-lite on a shelf inside its home, a
missing or unreadable record, any difference at all.

Time alone may change what a run does: a job that failed (a model outage, a hanging store)
waits out a back-off and is owed again when it ends. So a ``run --once`` is recorded only when
no work is owed now or later by the clock alone
(:func:`dsh_memory_worker.worker.watch.owed.owed_by_clock`: the
owed work judged after every back-off has passed); ``--once`` treats every session as idle, so
no idle timer is left. ``status`` figures are recorded only when no lease is held and no failure
is recorded (a lease expires with time; a failure line stays in the state database only).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from dsh_memory_worker.worker.settings import Settings

#: Bumped when the record's layout or the fingerprint's inputs change (old records are ignored).
RECORD_VERSION: Final = 1
#: A recorded timestamp must be older than the first fingerprint by this much (see above; 1 s
#: also covers a network file system whose clock is a little behind this host's).
SETTLE_NS: Final = 1_000_000_000
#: Records kept (one per configuration: environment, directory, options); older ones go.
KEEP_RECORDS: Final = 16
#: hypatia-lite's home when neither ``lite_home`` nor this variable is set: ``~/.hypatia-lite``
#: (hypatia-lite's ``shelves.lite_home``; a test checks the two agree).
LITE_HOME_ENV: Final = "HYPATIA_LITE_HOME"
_SKIPPED_DIRS: Final = frozenset({"__pycache__"})


def inputs_key(config: Path | None, overrides: Mapping[str, object]) -> str:
    """The digest naming one configuration (see the module docstring)."""
    given = {name: str(value) for name, value in overrides.items() if value is not None}
    text = json.dumps(
        [
            RECORD_VERSION,
            sys.executable,
            sys.version,
            os.getcwd(),
            sorted(item for item in os.environ.items() if item[0] != "_"),
            str(config) if config else None,
            sorted(given.items()),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _records_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "dsh-memory-worker" / "at-rest"


@dataclass(frozen=True, slots=True)
class Inputs:
    """The files a configuration's fingerprint covers (resolved once from the settings)."""

    state_db: str
    sessions_root: str
    lite_home: str
    config: str | None
    code: tuple[str, ...]


#: The packages whose source a run executes: the worker, the domain, the store (hypatia-lite, a
#: distribution of its own) and the Alembic scripts.
CODE_PACKAGES: Final = (
    "dsh_memory_worker.worker",
    "dsh_memory_worker.memory",
    "hypatia_lite",
    "dsh_memory_worker.migrations",
)


def _package_dir(name: str) -> Path:
    """Where package ``name`` is installed, found without importing it."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, name
    return Path(next(iter(spec.submodule_search_locations)))


def lite_home(settings: Settings) -> Path:
    """hypatia-lite's home for ``settings`` (as the lite store resolves it)."""
    if settings.lite_home is not None:
        return Path(settings.lite_home).expanduser().absolute()
    env = os.environ.get(LITE_HOME_ENV)
    return Path(env).expanduser().absolute() if env else Path.home() / ".hypatia-lite"


def inputs_of(settings: Settings, config: Path | None) -> Inputs | None:
    """What to fingerprint for ``settings``; ``None`` when this configuration always takes the
    full path (see the module docstring)."""
    database = settings.state_file
    if (
        database is None
        or settings.shipping
        or settings.store_transport != "lite"
        or settings.store_shelf_url
    ):
        return None
    home = lite_home(settings)
    if not _shelf_inside(home, settings.store_shelf):
        return None
    code = [_package_dir(name) for name in CODE_PACKAGES]
    if settings.migrations_dir is not None:
        code.append(Path(settings.migrations_dir))
    raw_config = config if config is not None else os.environ.get("MEMORY_WORKER_CONFIG")
    return Inputs(
        state_db=str(database),
        sessions_root=str(settings.sessions_root),
        lite_home=str(home),
        config=str(Path(raw_config).expanduser().absolute()) if raw_config else None,
        code=tuple(str(path) for path in code),
    )


def _shelf_inside(home: Path, shelf: str) -> bool:
    """True when ``shelf`` is a SQLite shelf in hypatia-lite's home (its files are fingerprinted
    there); a shelf registered elsewhere or in PostgreSQL takes the full path."""
    try:
        registry = json.loads((home / "shelves.json").read_text(encoding="utf-8"))
        location = registry["shelves"][shelf]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not isinstance(location, str) or "://" in location:
        return False
    try:
        return Path(location).resolve().is_relative_to(home.resolve())
    except OSError:
        return False


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _tree(root: str, max_depth: int = 6) -> Iterator[tuple[str, Any]]:
    """``(path, stat)`` of every file under ``root`` (a code or store tree: ``__pycache__``
    directories, which importing rewrites, are left out), symbolic links followed like a reader
    would; ``root`` itself is reported even when it is missing."""
    yield root, _stat(root)
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if name in _SKIPPED_DIRS:
                continue
            path = os.path.join(directory, name)
            found = _stat(path)
            if found is not None and (found[0] & 0o170000) == 0o040000:  # a directory
                if depth < max_depth:
                    stack.append((path, depth + 1))
            else:
                yield path, found


def _sessions(root: str) -> Iterator[tuple[str, Any]]:
    """``(path, stat)`` of what decides which sessions a full run finds and what it reads,
    listed by the full run's own rule (:func:`dsh_memory_worker.memory.dsh.locate.listed_paths`): no
    name is
    skipped there, not even ``__pycache__`` (a session may be called that)."""
    from dsh_memory_worker.memory.dsh.locate import listed_paths

    for path in listed_paths(Path(root)):
        yield path, _stat(path)


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A digest of the inputs' metadata and the newest timestamp among them."""

    digest: str
    newest_ns: int


def fingerprint(inputs: Inputs) -> Fingerprint | None:
    """The fingerprint of ``inputs``; ``None`` while the state database does not exist (the full
    path creates and migrates it)."""
    database = inputs.state_db
    entries: list[tuple[str, Any]] = [
        (database + suffix, _stat(database + suffix)) for suffix in ("", "-wal", "-journal")
    ]
    if entries[0][1] is None:
        return None
    entries += _sessions(inputs.sessions_root)
    entries += _tree(inputs.lite_home)
    if inputs.config is not None:
        entries.append((inputs.config, _stat(inputs.config)))
    for root in inputs.code:
        entries += _tree(root)
    digest = hashlib.sha256(json.dumps(asdict(inputs)).encode())
    newest = 0
    for path, found in entries:
        digest.update(json.dumps([path, found]).encode())
        if found is not None:
            newest = max(newest, found[2], found[3])
    return Fingerprint(digest.hexdigest(), newest)


def _read(key: str) -> dict[str, Any] | None:
    try:
        record = json.loads((_records_dir() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    return record


def recorded(key: str, answer: str) -> Any:
    """The recorded ``answer`` of configuration ``key`` when the fingerprint of its inputs is
    the one recorded with it, else ``None`` (take the full path)."""
    record = _read(key)
    if record is None or answer not in record:
        return None
    try:
        inputs = Inputs(**{**record["inputs"], "code": tuple(record["inputs"]["code"])})
    except (KeyError, TypeError):
        return None
    now = fingerprint(inputs)
    if now is None or record.get("fingerprint") != now.digest:
        return None
    return record[answer]


class Watch:
    """Fingerprints taken before and after a full command; :meth:`keep` records its answer
    when the two are equal and settled (see the module docstring)."""

    def __init__(self, key: str, settings: Settings, config: Path | None) -> None:
        self.key = key
        self.started_ns = time.time_ns()
        self.inputs = inputs_of(settings, config)
        self.before = None if self.inputs is None else fingerprint(self.inputs)

    def keep(self, answer: str, value: Any) -> bool:
        """Record ``value`` as ``answer`` if the command changed nothing; True when recorded.
        Never raises: a record that cannot be written only means the next command is full."""
        before, inputs = self.before, self.inputs
        if inputs is None or before is None or before.newest_ns >= self.started_ns - SETTLE_NS:
            return False
        if fingerprint(inputs) != before:
            return False
        record = _read(self.key)
        if record is None or record.get("fingerprint") != before.digest:
            record = {
                "version": RECORD_VERSION,
                "fingerprint": before.digest,
                "inputs": asdict(inputs),
            }
        record[answer] = value
        try:
            _write_private(_records_dir() / f"{self.key}.json", json.dumps(record))
        except OSError:
            return False
        return True


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file + rename), readable by the owner
    only (a record holds session ids and paths, like the state database); keep the newest
    :data:`KEEP_RECORDS` records."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        others = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in others[:-KEEP_RECORDS]:
            old.unlink(missing_ok=True)
