"""Hostile DSH homes for the hostile-input tests: good sessions written once and copied, and bad
entries (bombs, mutated, torn, symlinked, non-regular, mis-typed) added beside them."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, project_key

BIN = Path(sys.executable).parent
CWD = "/home/dev/proj"
PROJECT = project_key(CWD)


def header(session_id: str, **extra: Any) -> bytes:
    row = {
        "type": "session",
        "version": 4,
        "id": session_id,
        "createdAt": 1_700_000_000_000,
        "cwd": CWD,
        "isSeeded": False,
        "delegationDepth": 0,
        **extra,
    }
    return json.dumps(row).encode() + b"\n"


def session_path(home: Path, name: str, log: str = "session.v4.jsonl") -> Path:
    directory = home / "sessions" / PROJECT / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory / log


def write_good(home: Path, session_id: str, turns: int, *, compressed: bool = False) -> Path:
    writer = SessionLogWriter(
        home, session_id, CWD, created_at=1_700_000_000_000, compressed=compressed
    )
    for n in range(turns):
        writer.turn(f"{session_id} question {n}", f"{session_id} answer {n}")
        writer.flush()
    return writer.path


def write_bomb(path: Path, expands_to: int) -> None:
    """A zstd log: a proper header frame, then one frame (size not declared) that decodes to
    ``expands_to`` bytes of spaces: a few kilobytes on disk."""
    compressor = zstandard.ZstdCompressor(level=3)
    head = compressor.compress(header(path.parent.name))
    stream = compressor.compressobj()
    piece = b" " * (1 << 20)
    body = b"".join(stream.compress(piece) for _ in range(expands_to >> 20)) + stream.flush()
    path.write_bytes(head + body)


def env(root: Path, **extra: str) -> dict[str, str]:
    out = {
        **os.environ,
        "MEMORY_WORKER_DATA_DIR": str(root / "data"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        "COLUMNS": "300",
        **extra,
    }
    out.pop("MEMORY_WORKER_STATE_URL", None)
    out.setdefault("MEMORY_WORKER_CONSOLIDATION_ENABLED", "false")
    return out


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    max_rss_kb: int
    lines: list[str] = field(default_factory=list)


def run_worker(
    root: Path,
    *args: str,
    environ: dict[str, str] | None = None,
    drop_dac: bool = False,
    timeout: float = 180,
) -> Outcome:
    """``memory-worker ARGS`` in a child process; its peak RSS from ``wait4``. ``drop_dac``: as
    root, without the capabilities that ignore file permissions (so a mode-000 directory is
    unreadable to it, as it is to any user)."""
    command = [str(BIN / "memory-worker"), *args]
    if drop_dac and os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", *command]
    root.mkdir(parents=True, exist_ok=True)
    out_path, err_path = root / "worker.out", root / "worker.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(command, env=environ or env(root), stdout=out, stderr=err)
        try:
            _, status, usage = _wait4(process.pid, timeout)
        finally:
            process.returncode = 0  # reaped here; keep Popen from waiting again
    stderr = err_path.read_text(errors="replace")
    return Outcome(
        os.waitstatus_to_exitcode(status),
        out_path.read_text(errors="replace"),
        stderr,
        usage.ru_maxrss,
        [ln for ln in stderr.splitlines() if ln.strip()],
    )


def _wait4(pid: int, timeout: float) -> tuple[int, int, resource.struct_rusage]:
    import time

    deadline = time.monotonic() + timeout
    while True:
        found, status, usage = os.wait4(pid, os.WNOHANG)
        if found == pid:
            return found, status, usage
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            return os.wait4(pid, 0)
        time.sleep(0.05)


def store_dump(root: Path) -> dict[str, Any]:
    from hypatia_lite.store import LiteStore

    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def copy_home(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target
