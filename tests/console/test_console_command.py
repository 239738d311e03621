"""``memory-worker console`` as a command: the web stack loads for it alone, binding anywhere but
the loopback needs an explicit option and says what it exposes, and the token is still required
there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from console_support import http, running_console
from pipeline_support import cli_env

pytestmark = pytest.mark.integration  # a real subprocess or server

WEB = ("starlette", "jinja2", "uvicorn", "multipart", "dsh_memory_worker.worker.console")


def _imported(argv: list[str]) -> list[str]:
    probe = (
        "import sys\nfrom dsh_memory_worker.worker.cli import main\n"
        f"sys.argv = ['memory-worker', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m == 'dsh_memory_worker.worker.console' or "
        f"m.split('.')[0] in {WEB!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return [line for line in out.splitlines() if line.startswith("[")]


def test_help_loads_no_web_stack() -> None:
    assert _imported(["--help"]) == ["[]"]
    assert _imported(["console", "--help"]) == ["[]"]


def test_another_address_needs_the_explicit_option(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    done = run_cli(["console", "--host", "0.0.0.0", "--port", "0"], env=env, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "memory-worker console: --host 0.0.0.0 would let other machines reach the console; add "
        "--i-know-it-is-exposed to do that"
    ]
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_exposed_console_says_what_it_exposes_and_still_wants_the_token(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    with running_console(env, "--host", "0.0.0.0", "--i-know-it-is-exposed") as console:
        port = console.base.rsplit(":", 1)[1]
        local = f"http://127.0.0.1:{port}"
        assert http(local + "/sessions")[0] == 401
        status, body = http(f"{local}/sessions?token={console.token}")
        assert status == 303
        cookie = {"Cookie": f"memory_console_{port}={console.token}"}
        status, body = http(local + "/sessions", headers=cookie)
        assert status == 200 and "0 known" in body
        console.process.terminate()
        err = console.process.communicate(timeout=20)[1]
    lines = [line for line in err.splitlines() if "listening on" in line]
    assert len(lines) == 1
    assert lines[0].startswith(
        f"memory-worker console: listening on 0.0.0.0:{port}: anyone who "
        "can reach it and has the token can read every session's"
    )
