"""hypatia-lite's command line and MCP server on a home of the test's, run through the fork
server's launcher (:func:`cli_fork.launcher`: a separate process on real pipes)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cli_fork import launcher
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def lite_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without any ``HYPATIA_LITE_*`` variable, with ``home`` as the home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPATIA_LITE_")}
    return {**env, "HYPATIA_LITE_HOME": str(home), **extra}


def run_lite(home: Path, *argv: str) -> str:
    """``hypatia-lite ARGV`` on ``home``; its standard output (it must exit 0)."""
    done = subprocess.run(
        [launcher("hypatia-lite"), *argv],
        capture_output=True,
        text=True,
        env=lite_env(home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def lite_json(home: Path, *argv: str) -> Any:
    """``hypatia-lite ARGV`` on ``home``, its output read as JSON."""
    return json.loads(run_lite(home, *argv))


@asynccontextmanager
async def lite_mcp(home: Path) -> AsyncIterator[ClientSession]:
    """An MCP client session (not yet initialised) on ``hypatia-lite mcp`` over stdio."""
    params = StdioServerParameters(
        command=launcher("hypatia-lite"), args=["mcp"], env=lite_env(home), cwd=str(home.parent)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        yield session
