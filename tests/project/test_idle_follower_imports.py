"""An idle follower on the lite store without model routes loads neither the model SDK (``openai``)
nor the MCP client (``mcp``, ``anyio``): they are imported where a model route or the ``mcp``
transport is used (issue 16: idle RSS)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("openai", "mcp", "mcp_types", "anyio")


@pytest.mark.integration
def test_the_follow_path_imports_no_model_sdk_and_no_mcp_client() -> None:
    probe = (
        "import sys\n"
        "import dsh_memory_worker.worker.commands.run, dsh_memory_worker.worker.commands.daemon, "
        "dsh_memory_worker.worker.watch.watcher\n"
        "import dsh_memory_worker.worker.jobs.runtime, dsh_memory_worker.worker.run.runner, "
        "dsh_memory_worker.memory.store.factory\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert out == "[]"
