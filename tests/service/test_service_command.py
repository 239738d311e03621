"""`memory-worker service install | uninstall | status`, run as a subprocess in a temporary
``HOME`` / ``XDG_CONFIG_HOME``: the systemd unit passes ``systemd-analyze verify`` (Debian's
``systemd``; ``.ci/run`` installs it when missing), the LaunchAgent parses with ``plistlib``, and
install → status → uninstall leaves the temporary home exactly as it was. No user service
manager is reachable from these tests (``XDG_RUNTIME_DIR`` is an empty directory, no session
bus, no ``launchctl`` on Linux), so install writes the file and exits 1 with the command that
loads it — on a developer's machine too, where nothing gets enabled."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
PROGRAM = str((BIN / "memory-worker").absolute())
UNIT = "dsh-memory-worker.service"
LAUNCH_ENABLE = "launchctl bootstrap gui/$(id -u) {}"


def _env(tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_WORKER_", "DSH_", "XDG_", "DBUS_"))
    }
    for name in ("home", "config", "run"):
        (tmp / name).mkdir(exist_ok=True)
    env.update(
        HOME=str(tmp / "home"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_RUNTIME_DIR=str(tmp / "run"),
        MEMORY_WORKER_CONFIG="",
        PATH="/usr/local/bin:/usr/bin:/bin",
    )
    return env


def _service(tmp: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["service", *args], env={**_env(tmp), **extra}, timeout=120)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _verify(unit: Path, tmp: Path) -> str:
    checker = shutil.which("systemd-analyze")
    assert checker is not None, "systemd-analyze is missing: apt-get install systemd"
    done = subprocess.run(
        [checker, "verify", "--user", str(unit)],
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return f"{done.returncode} {done.stdout}{done.stderr}".strip()


def test_the_printed_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    config = tmp_path / "my worker.toml"
    config.write_text("flush_window_s = 30\n", encoding="utf-8")
    done = _service(
        tmp_path,
        "install",
        "--print",
        "--manager",
        "systemd",
        "--config",
        str(config),
        "--dsh-home",
        str(tmp_path / "dsh 50%"),
        "--env",
        'ODD=a "quoted" $HOME 100% \\ value',
        "--env",
        "PATH",
    )
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "check" / UNIT
    unit.parent.mkdir()
    unit.write_text(done.stdout, encoding="utf-8")
    assert _verify(unit, tmp_path) == "0"
    lines = done.stdout.splitlines()
    assert (
        f'ExecStart="{PROGRAM}" "run" "--config" "{config}" "--dsh-home" "{tmp_path}/dsh 50%%"'
    ) in lines
    assert 'Environment="ODD=a \\"quoted\\" $HOME 100%% \\\\ value"' in lines
    assert 'Environment="PATH=/usr/local/bin:/usr/bin:/bin"' in lines
    for line in (
        "Restart=on-failure",
        "KillSignal=SIGINT",
        "TimeoutStopSec=30",
        "WantedBy=default.target",
        "SyslogIdentifier=memory-worker",
    ):
        assert line in lines
    assert not any((tmp_path / "config").iterdir())  # --print installed nothing
    # The checker is not vacuous: the same unit with a missing program or a typo fails it.
    unit.write_text(done.stdout.replace(PROGRAM, PROGRAM + "-nope"), encoding="utf-8")
    assert "is not executable" in _verify(unit, tmp_path)
    unit.write_text(
        done.stdout.replace("KillSignal=SIGINT", "KillSignal=SIGNOPE"), encoding="utf-8"
    )
    assert "Failed to parse signal name" in _verify(unit, tmp_path)


def test_the_printed_launch_agent_parses(tmp_path: Path) -> None:
    done = _service(
        tmp_path,
        "install",
        "--print",
        "--manager",
        "launchd",
        "--dsh-home",
        str(tmp_path / "dsh"),
        "--env",
        "MEMORY_WORKER_LOG_LEVEL=DEBUG",
    )
    assert done.returncode == 0, done.stderr
    log = f"{tmp_path}/home/Library/Logs/dsh-memory-worker/worker.log"
    assert plistlib.loads(done.stdout.encode()) == {
        "Label": "local.dsh-memory-worker",
        "ProgramArguments": [PROGRAM, "run", "--dsh-home", str(tmp_path / "dsh")],
        "EnvironmentVariables": {
            "MEMORY_WORKER_LOG_LEVEL": "DEBUG",
            "PATH": f"{BIN.absolute()}:/usr/local/bin:/usr/bin:/bin",  # venv, system
        },
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ExitTimeOut": 30,
        "ProcessType": "Background",
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }


@pytest.mark.parametrize(
    ("manager", "path", "hint"),
    [
        (
            "systemd",
            "config/systemd/user/dsh-memory-worker.service",
            "systemctl --user daemon-reload && systemctl --user enable --now " + UNIT,
        ),
        (
            "launchd",
            "home/Library/LaunchAgents/local.dsh-memory-worker.plist",
            LAUNCH_ENABLE.format("{path}"),
        ),
    ],
)
def test_install_status_uninstall_round_trip(
    tmp_path: Path, manager: str, path: str, hint: str
) -> None:
    _env(tmp_path)  # makes home/, config/, run/
    (tmp_path / "config" / "systemd").mkdir(parents=True)  # a user's own, kept
    (tmp_path / "config" / "systemd" / "other.conf").write_text("x", encoding="utf-8")
    before = _tree(tmp_path)
    installed = tmp_path / path
    printed = _service(
        tmp_path, "install", "--print", "--manager", manager, "--dsh-home", str(tmp_path / "dsh")
    )
    assert printed.returncode == 0, printed.stderr

    done = _service(tmp_path, "install", "--manager", manager, "--dsh-home", str(tmp_path / "dsh"))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"memory-worker service: wrote {installed}, but {manager} is not reachable here ("
    ), lines
    assert lines[0].endswith(
        "); load it in your login session with: " + hint.format(path=installed)
    ), lines
    assert installed.read_text(encoding="utf-8") == printed.stdout
    assert installed.stat().st_mode & 0o777 == 0o600

    status = _service(tmp_path, "status", "--manager", manager)
    assert status.returncode == 1
    assert status.stdout.splitlines()[0] == f"installed: {installed}"
    assert "not reachable here" in status.stdout

    again = _service(tmp_path, "install", "--manager", manager)  # an update: no --dsh-home
    assert again.returncode == 1
    assert str(tmp_path / "dsh") not in installed.read_text(encoding="utf-8")

    removed = _service(tmp_path, "uninstall", "--manager", manager)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed {installed}\n"
    assert _tree(tmp_path) == before

    gone = _service(tmp_path, "status", "--manager", manager)
    assert (gone.returncode, gone.stdout) == (1, f"not installed (no {installed})\n")
    twice = _service(tmp_path, "uninstall", "--manager", manager)
    assert (twice.returncode, twice.stdout) == (
        0,
        f"not installed (no {installed}); nothing to remove\n",
    )


def test_an_unusable_config_is_one_line_and_installs_nothing(tmp_path: Path) -> None:
    missing = _service(
        tmp_path, "install", "--manager", "systemd", "--config", str(tmp_path / "nope.toml")
    )
    assert (missing.returncode, missing.stderr) == (
        2,
        f"memory-worker service: config file {tmp_path}/nope.toml does not exist\n",
    )
    bad = tmp_path / "bad.toml"
    bad.write_text("flush_window_s = -1\n", encoding="utf-8")
    invalid = _service(tmp_path, "install", "--manager", "systemd", "--config", str(bad))
    assert invalid.returncode == 2
    assert len(invalid.stderr.splitlines()) == 1 and "flush_window_s" in invalid.stderr
    unset = _service(tmp_path, "install", "--manager", "systemd", "--env", "NOT_SET_HERE")
    assert (unset.returncode, unset.stderr) == (
        2,
        "memory-worker service: --env NOT_SET_HERE: not set in this environment (give "
        "NOT_SET_HERE=VALUE)\n",
    )
    assert _tree(tmp_path / "config") == [] and _tree(tmp_path / "home") == []
