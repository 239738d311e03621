"""`memory-worker service install` carries the installing shell's settings (issue 35): from a
shell with ``DSH_HOME``, ``MEMORY_WORKER_*``, ``HYPATIA_*`` and a model route's key set, the unit
(checked by ``systemd-analyze verify``) and, run with the unit's environment only, its
``ExecStart`` follow the same home with the same route; the key is in a 0600 environment file,
never in the unit; the PATH is the venv's and the store's, not the shell's; ``service status``
says when this shell's settings differ from the service's. The LaunchAgent carries the same
(its ``ProgramArguments`` run with its ``EnvironmentVariables`` only)."""

from __future__ import annotations

import json
import plistlib
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from model_server import ModelServer, model_server_fixture  # noqa: F401
from test_service_command import PROGRAM, UNIT, _env, _verify

pytestmark = pytest.mark.integration

SECRET = "sk-test-'quoted' $HOME 100%"
STRANGER = "/opt/pyenv/shims:/home/u/.cargo/bin"


def _shell(tmp: Path, server: ModelServer) -> dict[str, str]:
    """The user's shell: the settings they tried `memory-worker run` with."""
    routes = [
        {"base_url": server.base_url, "model": "deepseek-chat", "api_key_env": "DEEPSEEK_API_KEY"}
    ]
    return {
        **_env(tmp),
        "PATH": f"{STRANGER}:/usr/local/bin:/usr/bin:/bin",
        "DSH_HOME": str(tmp / "dsh"),
        "DSH_SESSION_ID": "the-installing-session",
        "MEMORY_WORKER_DATA_DIR": str(tmp / "data"),
        "MEMORY_WORKER_MODEL_ROUTES": json.dumps(routes),
        "MEMORY_WORKER_LOG_LEVEL": "WARNING",
        "HYPATIA_LITE_HOME": str(tmp / "lite"),
        "DEEPSEEK_API_KEY": SECRET,
    }


def _unit_environment(unit: Path, home: Path) -> tuple[list[str], dict[str, str]]:
    """ExecStart and the environment systemd gives it: HOME, Environment=, EnvironmentFile=
    (read by ``sh``, whose single quotes are the systemd parser's)."""
    argv: list[str] = []
    env = {"HOME": str(home)}
    for line in unit.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(value)]
        elif key == "Environment":
            name, _, setting = shlex.split(value)[0].replace("%%", "%").partition("=")
            env[name] = setting
        elif key == "EnvironmentFile":
            dumped = subprocess.run(
                ["/bin/sh", "-c", 'set -a && . "$0" && env -0', value],
                env={},
                capture_output=True,
                check=True,
            ).stdout.decode()
            for item in dumped.split("\0"):
                name, equals, setting = item.partition("=")
                if equals and name not in ("PWD", "SHLVL", "_", "OLDPWD"):
                    env[name] = setting
    return argv, env


def _effective(argv0: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [argv0, "config", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    keep = ("dsh_home", "data_dir", "lite_home", "model_routes", "state_url", "log_level")
    return {k: shown[k] for k in keep}


def test_the_unit_runs_with_the_shells_home_and_routes(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.echo = True
    shell = _shell(tmp_path, model_server)
    made = run_cli(["demo-home", shell["DSH_HOME"]], env=shell, timeout=120)
    assert made.returncode == 0, made.stderr
    done = run_cli(["service", "install", "--manager", "systemd"], env=shell, timeout=120)
    assert done.returncode == 1, done.stderr  # no user bus here: written, not loaded
    unit = tmp_path / "config" / "systemd" / "user" / UNIT
    secrets = tmp_path / "config" / "dsh-memory-worker" / "service.env"
    assert done.stdout.splitlines() == [
        "carries DEEPSEEK_API_KEY (a secret: in the environment file, 0600)",
        f"carries DSH_HOME={tmp_path}/dsh",
        f"carries HYPATIA_LITE_HOME={tmp_path}/lite",
        "does not carry MEMORY_WORKER_CONFIG (empty here)",
        f"carries MEMORY_WORKER_DATA_DIR={tmp_path}/data",
        "carries MEMORY_WORKER_LOG_LEVEL=WARNING",
        "carries MEMORY_WORKER_MODEL_ROUTES=" + shell["MEMORY_WORKER_MODEL_ROUTES"][:99] + "…",
        f"does not carry this shell's PATH (the service's: {Path(PROGRAM).parent}:"
        "/usr/local/bin:/usr/bin:/bin)",
        "does not carry DSH_SESSION_ID (the worker reads only DSH_HOME)",
        f"environment file (mode 0600): {secrets}",
    ]
    assert _verify(unit, tmp_path) == "0"
    # The key is in the 0600 file only; the unit references it.
    assert SECRET.encode() not in unit.read_bytes()
    assert secrets.stat().st_mode & 0o777 == 0o600
    assert f"EnvironmentFile={secrets}" in unit.read_text(encoding="utf-8").splitlines()
    assert STRANGER not in unit.read_text(encoding="utf-8")
    assert "Documentation=file://" in unit.read_text(encoding="utf-8")

    argv, env = _unit_environment(unit, tmp_path / "home")
    assert argv == [PROGRAM, "run"]
    assert env["DEEPSEEK_API_KEY"] == SECRET
    assert env["PATH"] == f"{Path(PROGRAM).parent}:/usr/local/bin:/usr/bin:/bin"
    # The same home, data, store and routes (the key set) as the shell's own `config`.
    in_shell = _effective(PROGRAM, shell)
    assert _effective(argv[0], env) == in_shell
    assert in_shell["dsh_home"] == f"{tmp_path}/dsh"
    assert [r["api_key_set"] for r in in_shell["model_routes"]] == [True]  # type: ignore[attr-defined]

    # ExecStart itself, with the unit's environment only (--once: it ends).
    ran = subprocess.run([*argv, "--once"], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "8 sessions" in ran.stdout + ran.stderr
    assert (tmp_path / "data" / "state.db").is_file()
    assert (tmp_path / "lite" / "shelves.json").is_file()
    assert not (tmp_path / "home" / ".dsh").exists()
    assert model_server.requests, "the route was not called"
    assert {r.headers["authorization"] for r in model_server.requests} == {f"Bearer {SECRET}"}
    assert {r.json["model"] for r in model_server.requests} == {"deepseek-chat"}

    # status compares the service's settings with this shell's.
    same = run_cli(["service", "status", "--manager", "systemd"], env=shell, timeout=120)
    assert "settings: the same as this shell's" in same.stdout.splitlines()
    moved = {**shell, "DSH_HOME": str(tmp_path / "other"), "DEEPSEEK_API_KEY": "sk-new"}
    moved.pop("MEMORY_WORKER_LOG_LEVEL")
    differs = run_cli(["service", "status", "--manager", "systemd"], env=moved, timeout=120)
    assert (
        "settings: differ from this shell's: DEEPSEEK_API_KEY (a different secret); "
        f"DSH_HOME (service {tmp_path}/dsh, here {tmp_path}/other); "
        "MEMORY_WORKER_LOG_LEVEL (in the service, not set here)"
    ) in differs.stdout.splitlines()
    assert "sk-new" not in differs.stdout and SECRET not in differs.stdout

    removed = run_cli(["service", "uninstall", "--manager", "systemd"], env=shell, timeout=120)
    assert removed.returncode == 0, removed.stderr
    assert not secrets.exists() and not secrets.parent.exists() and not unit.exists()


def test_the_launch_agent_runs_with_the_shells_settings(
    tmp_path: Path, model_server: ModelServer
) -> None:
    shell = _shell(tmp_path, model_server)
    done = run_cli(["service", "install", "--manager", "launchd"], env=shell, timeout=120)
    assert done.returncode == 1, done.stderr
    agent_file = tmp_path / "home" / "Library" / "LaunchAgents" / "local.dsh-memory-worker.plist"
    secrets = tmp_path / "home" / "Library" / "Application Support" / "dsh-memory-worker"
    secrets = secrets / "service.env"
    assert SECRET.encode() not in agent_file.read_bytes()
    assert secrets.stat().st_mode & 0o777 == 0o600
    agent = plistlib.loads(agent_file.read_bytes())
    assert agent["ProgramArguments"][3:] == [str(secrets), PROGRAM, "run"]
    assert sorted(agent["EnvironmentVariables"]) == [
        "DSH_HOME",
        "HYPATIA_LITE_HOME",
        "MEMORY_WORKER_DATA_DIR",
        "MEMORY_WORKER_LOG_LEVEL",
        "MEMORY_WORKER_MODEL_ROUTES",
        "PATH",
    ]
    # launchd runs ProgramArguments with EnvironmentVariables (and HOME): `config` instead of
    # `run` shows what the worker would follow.
    argv = [*agent["ProgramArguments"][:-1], "config", "--json"]
    env = {"HOME": str(tmp_path / "home"), **agent["EnvironmentVariables"]}
    shown = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["dsh_home"] == f"{tmp_path}/dsh"
    assert _effective(PROGRAM, shell) == {
        k: v
        for k, v in json.loads(shown.stdout).items()
        if k in ("dsh_home", "data_dir", "lite_home", "model_routes", "state_url", "log_level")
    }
    status = run_cli(["service", "status", "--manager", "launchd"], env=shell, timeout=120)
    assert "settings: the same as this shell's" in status.stdout.splitlines()


def test_print_shows_the_store_binary_directory_and_no_secret(tmp_path: Path) -> None:
    store_dir = tmp_path / "store bin"
    store_dir.mkdir()
    binary = store_dir / "hypatia"
    binary.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    binary.chmod(0o755)
    env = {
        **_env(tmp_path),
        "PATH": f"{STRANGER}:{store_dir}:/usr/bin:/bin",
        "MEMORY_WORKER_STORE_TRANSPORT": "cli",
        "MEMORY_WORKER_STATE_URL": "postgresql://memory:pw-secret@db:5432/memory",
        "MY_TOKEN": "t0ken",
    }
    done = run_cli(
        ["service", "install", "--print", "--manager", "systemd", "--env", "MY_TOKEN"],
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    path = f"{Path(PROGRAM).parent}:{store_dir}:/usr/local/bin:/usr/bin:/bin"
    assert f'Environment="PATH={path}"' in done.stdout.splitlines()
    assert "pw-secret" not in done.stdout and "t0ken" not in done.stdout
    assert "carries MEMORY_WORKER_STATE_URL (a secret: in the environment file, 0600)" in (
        done.stderr.splitlines()
    )
    assert "carries MY_TOKEN (--env)" in done.stderr.splitlines()
    unit = tmp_path / "check" / UNIT
    unit.parent.mkdir()
    unit.write_text(done.stdout, encoding="utf-8")
    assert _verify(unit, tmp_path).startswith("0")
    assert not any((tmp_path / "config").iterdir())  # --print wrote no file, no secret


@pytest.mark.parametrize("manager", ["systemd", "launchd"])
def test_status_compares_with_the_installed_config_file(tmp_path: Path, manager: str) -> None:
    """The service was installed with `--config FILE` (its route reads DEEPSEEK_API_KEY): status
    reads the settings of that file, as the service does, not this shell's config."""
    config = tmp_path / "my $config 100%.toml"
    config.write_text(
        '[[model_routes]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        'api_key_env = "DEEPSEEK_API_KEY"\n',
        encoding="utf-8",
    )
    shell = {**_env(tmp_path), "DEEPSEEK_API_KEY": SECRET, "DSH_HOME": str(tmp_path / "dsh")}
    args = ["--manager", manager, "--config", str(config)]
    done = run_cli(["service", "install", *args], env=shell, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "carries DEEPSEEK_API_KEY (a secret: in the environment file, 0600)" in done.stdout
    status = run_cli(["service", "status", "--manager", manager], env=shell, timeout=120)
    assert "settings: the same as this shell's" in status.stdout.splitlines(), status.stdout
    other = {**shell, "DEEPSEEK_API_KEY": "sk-other"}
    status = run_cli(["service", "status", "--manager", manager], env=other, timeout=120)
    assert (
        "settings: differ from this shell's: DEEPSEEK_API_KEY (a different secret)"
        in status.stdout.splitlines()
    ), status.stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, *sys.argv[1:]]))
