"""The project scope of a session: the basename of its cwd's git top level. The one place the
watcher runs ``git`` (a subprocess, so it stays out of the pure :mod:`memory` domain)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import PurePosixPath
from typing import Final

from dsh_memory_worker.memory.constants import ROOT_PROJECT
from dsh_memory_worker.memory.content.slugs import normalise_project
from dsh_memory_worker.worker.settings import environment_without

_GIT_LOCATION_VARS: Final = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
GIT_TIMEOUT_S: Final = 3.0

_project_cache: dict[str, str] = {}
_project_lock = threading.Lock()


def _git_toplevel(cwd: str) -> tuple[str | None, bool]:
    """(top-level path or None, whether the answer may be cached)."""
    env = environment_without(_GIT_LOCATION_VARS)
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "--show-toplevel"],
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, False
    except OSError:
        return None, True
    if done.returncode != 0:
        return None, True
    root = done.stdout.decode("utf-8", "replace")
    root = root[:-2] if root.endswith("\r\n") else root.removesuffix("\n")
    return (root or None), True


def project_scope(cwd: str | None) -> str:
    """The project scope of a session directory: basename of its git top level (3 s timeout, git
    location variables removed), else the cwd's own basename, normalised by
    :func:`memory.content.slugs.normalise_project`. Cached per cwd; a timeout is not cached. No
    cwd → ``/``."""
    if not cwd:
        return ROOT_PROJECT
    with _project_lock:
        cached = _project_cache.get(cwd)
    if cached is not None:
        return cached
    root, cacheable = _git_toplevel(cwd)
    scope = normalise_project(PurePosixPath(root if root is not None else cwd).name)
    if cacheable:
        with _project_lock:
            _project_cache[cwd] = scope
    return scope


def clear_project_cache() -> None:
    """Forget every cached scope (tests; a long-running daemon after a repository move)."""
    with _project_lock:
        _project_cache.clear()
