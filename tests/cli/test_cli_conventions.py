"""The habits every command shares: ``--dsh-home`` on every command that reads the logs (one
option definition), ``-h`` as ``--help``, ``python -m dsh_memory_worker``, the exit-code table in
``--help``,
and the state-database driver error naming the extra to install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import BIN, cli_env, memory_worker
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import COMMANDS, _register, app

LOG_READERS = [
    "run",
    "status",
    "daemon",
    "retract",
    "forget",
    "relog",
    "reconsolidate",
    "verify-forgetting",
    "config",
]
GROUPS = {"segments": ["prune"], "service": ["install", "uninstall", "status"]}


def _help(*argv: str) -> str:
    _register()
    done = CliRunner().invoke(app, list(argv), prog_name="memory-worker")
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("command", LOG_READERS)
def test_every_log_reading_command_accepts_dsh_home(command: str) -> None:
    assert "--dsh-home" in _help(command, "--help")


@pytest.mark.integration
def test_dsh_home_reaches_the_settings(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = memory_worker(tmp_path, "config", "--json", "--dsh-home", str(tmp_path / "elsewhere"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dsh_home"] == str(tmp_path / "elsewhere")
    retract = memory_worker(
        tmp_path, "retract", "--all", "--dry-run", "--dsh-home", str(tmp_path / "elsewhere")
    )
    assert retract.returncode == 0, retract.stderr


def _every_command() -> list[list[str]]:
    found: list[list[str]] = [[]]
    for name in COMMANDS:
        found += [[name, sub] for sub in GROUPS[name]] if name in GROUPS else [[name]]
    return found


@pytest.mark.parametrize("argv", _every_command(), ids=" ".join)
def test_h_is_help_everywhere(argv: list[str]) -> None:
    assert _help(*argv, "-h") == _help(*argv, "--help")


def test_help_ends_with_the_exit_status_table() -> None:
    text = _help("--help")
    table = text[text.index("Exit status:") :]
    for line in ("0  ", "1  ", "2  "):
        assert f"\n    {line}" in table, table
    assert "docs/cli.md" in table


@pytest.mark.integration
def test_python_m_worker_and_worker_cli(tmp_path: Path) -> None:
    from dsh_memory_worker import __version__

    env = cli_env(tmp_path)
    version = subprocess.run(
        [sys.executable, "-m", "dsh_memory_worker", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (version.returncode, version.stdout) == (0, f"memory-worker {__version__}\n")
    helped = subprocess.run(
        [sys.executable, "-m", "dsh_memory_worker.worker.cli", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert helped.returncode == 0
    assert helped.stdout.startswith("Usage: ") and "retract" in helped.stdout


@pytest.mark.integration
def test_a_postgresql_state_url_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    probe = (
        "import sys\nsys.modules['psycopg'] = None\nsys.modules['psycopg2'] = None\n"
        "from dsh_memory_worker.worker.cli import main\nsys.argv = ['memory-worker', "
        "'status']\nmain()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path, MEMORY_WORKER_STATE_URL="postgresql://u@127.0.0.1/x"),
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "memory-worker: cannot open the state database: state URL driver "
        "'postgresql+psycopg' is not installed (psycopg); install the distributed extra: "
        "pip install 'dsh-memory-worker[distributed]'"
    ], done.stderr
    assert not (tmp_path / "data").exists()
    assert BIN.is_dir()
