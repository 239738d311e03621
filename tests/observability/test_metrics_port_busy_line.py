"""A metrics port that is already taken is reported on ONE line (no 80-column wrap) and the
command goes on without metrics."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest
from rich.console import Console

from dsh_memory_worker.worker.commands import common as run_cmd
from dsh_memory_worker.worker.commands import options
from dsh_memory_worker.worker.settings import load_settings


def test_busy_port_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
    taken.bind(("0.0.0.0", 0))
    taken.listen()
    port = taken.getsockname()[1]
    out = io.StringIO()
    monkeypatch.setattr(options, "err", Console(file=out, width=80))  # `say` prints on it
    monkeypatch.delenv("MEMORY_WORKER_STATE_URL", raising=False)
    monkeypatch.delenv("MEMORY_WORKER_CONFIG", raising=False)
    settings = load_settings(data_dir=tmp_path, metrics_port=port)
    try:
        run_cmd.serve_metrics(settings)
    finally:
        taken.close()
    assert out.getvalue().splitlines() == [
        f"memory-worker: metrics port {port} unavailable: Address already in use; "
        "continuing without metrics"
    ]
