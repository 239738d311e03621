"""``mypy --strict`` over the installed import names, from a checkout.

The packages live in top-level folders (``worker/``, ``memory/``) that install as
``dsh_memory_worker.worker`` and ``dsh_memory_worker.memory`` (setup.py's package-dir mapping).
mypy resolves imports from the file system, not through the editable install's import hook, so
this lays the installed layout out as symbolic links under ``.mypy_cache/namespace/`` (a stable
place, so mypy's cache stays warm) and checks the packages there. Reports name the installed
paths (``dsh_memory_worker/worker/cli.py``: the checkout's ``worker/cli.py``).

    .venv/bin/python tests/support/typecheck.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "dsh_memory_worker"
#: Installed package → its folder in the checkout (the Alembic scripts are not type-checked).
LAYOUT = {f"{NAMESPACE}/worker": "worker", f"{NAMESPACE}/memory": "memory"}
#: The packages checked, by import name.
PACKAGES = (NAMESPACE, "hypatia_lite")


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.resolve() == target.resolve():
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def lay_out(root: Path) -> Path:
    """The installed layout under ``root``, as links into the checkout."""
    for item in (REPO / NAMESPACE).iterdir():
        if item.name != "__pycache__":
            _link(root / NAMESPACE / item.name, item)
    for installed, folder in LAYOUT.items():
        _link(root / installed, REPO / folder)
    _link(root / "hypatia_lite", REPO / "hypatia-lite" / "hypatia_lite")
    return root


def run_mypy(mypy: str | None = None) -> subprocess.CompletedProcess[str]:
    root = lay_out(REPO / ".mypy_cache" / "namespace")
    argv = [mypy or str(Path(sys.executable).with_name("mypy"))]
    argv += ["--config-file", str(REPO / "pyproject.toml")]
    argv += ["--cache-dir", str(REPO / ".mypy_cache")]
    for package in PACKAGES:
        argv += ["-p", package]
    return subprocess.run(
        argv, cwd=root, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
    )


if __name__ == "__main__":
    done = run_mypy()
    sys.stdout.write(done.stdout + done.stderr)
    raise SystemExit(done.returncode)
