"""A value a service file cannot carry is one line, never a traceback (issue 32, defect 8 /
build item 9): a control character in an ``--env`` value or in the ``--dsh-home`` path cannot go
into a launchd property list (XML), and bytes that are not UTF-8 (a value the shell holds as
such) into neither file. ``service install`` names the value, exits 2 and writes nothing, with
``--print`` too; a value both can carry still installs. Real subprocesses, a temporary HOME."""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent / "memory-worker"


def _install(
    tmp: Path, *args: str, env_extra: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    for name in ("home", "config", "run"):
        (tmp / name).mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_WORKER_", "DSH_", "XDG_", "DBUS_"))
    }
    env.update(
        HOME=str(tmp / "home"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_RUNTIME_DIR=str(tmp / "run"),
        MEMORY_WORKER_CONFIG="",
        PATH="/usr/local/bin:/usr/bin:/bin",
        **(env_extra or {}),
    )
    done = subprocess.run(
        [str(BIN), "service", "install", *args],
        env={k: os.fsencode(v) if isinstance(v, str) else v for k, v in env.items()},
        capture_output=True,
        timeout=120,
    )
    return done.returncode, done.stderr.decode("utf-8", "replace"), done.stdout


def _files(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in (tmp / "home").rglob("*")) + sorted(
        str(p.relative_to(tmp)) for p in (tmp / "config").rglob("*")
    )


@pytest.mark.parametrize("print_", [True, False])
def test_a_control_character_for_launchd_is_one_line(tmp_path: Path, print_: bool) -> None:
    flags = ["--print"] if print_ else []
    code, err, _ = _install(tmp_path, "--manager", "launchd", *flags, "--env", "GREETING=a\x01b")
    assert "Traceback" not in err, err
    assert (code, err) == (
        2,
        "memory-worker service: --env GREETING: its value holds the control character "
        "'\\x01', which a launchd property list cannot carry; nothing installed\n",
    )
    home = tmp_path / "dsh\x02home"
    code, err, _ = _install(tmp_path, "--manager", "launchd", *flags, "--dsh-home", str(home))
    assert (code, err) == (
        2,
        "memory-worker service: --dsh-home: its value holds the control character "
        "'\\x02', which a launchd property list cannot carry; nothing installed\n",
    )
    assert _files(tmp_path) == []


@pytest.mark.parametrize("manager", ["launchd", "systemd"])
def test_a_value_that_is_not_utf8_is_one_line(tmp_path: Path, manager: str) -> None:
    code, err, _ = _install(
        tmp_path, "--manager", manager, "--print", "--env", "RAW",
        env_extra={"RAW": os.fsdecode(b"caf\xe9")},
    )  # fmt: skip
    assert "Traceback" not in err, err
    assert (code, err) == (
        2,
        "memory-worker service: --env RAW: its value is not UTF-8 text, which a service file "
        "cannot carry; nothing installed\n",
    )
    assert _files(tmp_path) == []


def test_tabs_and_ordinary_text_still_install(tmp_path: Path) -> None:
    code, err, out = _install(
        tmp_path, "--manager", "launchd", "--print", "--env", "GREETING=a\tb é"
    )
    assert code == 0, err
    assert plistlib.loads(out)["EnvironmentVariables"]["GREETING"] == "a\tb é"
