"""The default ``data_dir``: platformdirs' user data directory, with the locations homes were
made in before kept working (``worker.settings`` uses it when no setting names one). It reads no
environment variable: the settings module alone does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from platformdirs.api import PlatformDirsABC

#: The directory name of the worker's own files under the platform's data directory.
DATA_DIR_NAME = "dsh-memory-worker"

#: platformdirs' class for this platform when None; a test gives it platformdirs' macOS class.
_platform_dirs: type[PlatformDirsABC] | None = None


def default_data_dir(old: Path) -> tuple[Path, bool]:
    """The default ``data_dir`` and whether it is the old location kept for an existing home;
    ``old`` is the old rule's directory (``worker.settings``, which reads the environment).

    platformdirs' user data directory: ``~/Library/Application Support`` on macOS; on Linux
    (platformdirs' Unix rule) exactly the old rule, ``$XDG_DATA_HOME`` honoured even where
    platformdirs would ignore it (a relative or ``~/…`` value). Where the platform's directory
    differs from the old rule's and the old one already holds a state database (the new one
    none), the old one stays in use: a home made before keeps working where it is."""
    from platformdirs import PlatformDirs
    from platformdirs.unix import Unix

    kind = _platform_dirs or PlatformDirs
    if issubclass(kind, Unix):
        return old, False
    chosen = Path(kind(DATA_DIR_NAME, appauthor=False).user_data_dir)
    if chosen != old and (old / "state.db").is_file() and not (chosen / "state.db").exists():
        return old, True
    return chosen, False
