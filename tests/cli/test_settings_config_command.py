"""`memory-worker config` prints the effective values and never a secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app

SECRETS = ("hunter2", "s3cret-pg", "sk-inline-key", "sk-env-key")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "worker.toml"
    config.write_text(
        'state_url = "postgresql://mw:s3cret-pg@db:5432/mw"\n'
        "flush_window_s = 30\n"
        "[[model_routes]]\n"
        'base_url = "https://api.example.test/v1"\n'
        'model = "chat"\n'
        'api_key = "sk-inline-key"\n'
        "[[model_routes]]\n"
        'base_url = "http://127.0.0.1:9000/v1"\n'
        'model = "local"\n'
        'api_key_env = "LOCAL_KEY"\n',
        encoding="utf-8",
    )
    return {
        "HOME": str(tmp_path / "home"),
        "DSH_HOME": str(tmp_path / "dsh"),
        "MEMORY_WORKER_CONFIG": str(config),
        "MEMORY_WORKER_BROKER_URL": "redis://:hunter2@redis:6379/0",
        "MEMORY_WORKER_RESULT_BACKEND": "",
        "MEMORY_WORKER_FLUSH_WINDOW_S": "15",
        "LOCAL_KEY": "sk-env-key",
    }


def test_config_json_shows_effective_values_with_secrets_masked(
    env: dict[str, str], tmp_path: Path
) -> None:
    _register()
    result = CliRunner().invoke(app, ["config", "--json"], env=env)
    assert result.exit_code == 0, result.output
    for secret in SECRETS:
        assert secret not in result.output
    values = json.loads(result.output)
    assert values["broker_url"] == "redis://:***@redis:6379/0"
    assert values["state_url"] == "postgresql://mw:***@db:5432/mw"
    assert values["flush_window_s"] == 15.0  # env beats the file's 30
    assert values["sessions_root"] == str(tmp_path / "dsh" / "sessions")
    assert values["model_routes"] == [
        {
            "base_url": "https://api.example.test/v1",
            "model": "chat",
            "api_key_env": None,
            "api_key": "***",
            "reasoning_effort": None,
            "api_key_set": True,
        },
        {
            "base_url": "http://127.0.0.1:9000/v1",
            "model": "local",
            "api_key_env": "LOCAL_KEY",
            "api_key": None,
            "reasoning_effort": None,
            "api_key_set": True,
        },
    ]


def test_config_table_lists_every_setting_masked(env: dict[str, str]) -> None:
    _register()
    result = CliRunner().invoke(app, ["config"], env=env)
    assert result.exit_code == 0, result.output
    for secret in SECRETS:
        assert secret not in result.output
    for name in ("broker_url", "state_url", "withdrawal_kinds", "lease_ttl_s", "sessions_root"):
        assert name in result.output
    assert "redis://:***@redis:6379/0" in result.output


def test_invalid_configuration_is_one_line_and_exit_2(env: dict[str, str]) -> None:
    _register()
    env = {**env, "MEMORY_WORKER_STORE_TRANSPORT": "carrier-pigeon"}
    result = CliRunner().invoke(app, ["config", "--json"], env=env)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("memory-worker: invalid configuration: store_transport:")


def _from_column(output: str) -> dict[str, str]:
    """The table's rows as setting -> its `from` cell."""
    return {
        line.split("│")[1].strip(): line.split("│")[3].strip()
        for line in output.splitlines()
        if line.count("│") == 4
    }


def test_defaults_computed_from_dsh_home_and_xdg_data_home_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dsh_home` taken from $DSH_HOME is not a default: the table says `env DSH_HOME`."""
    for name in list(os.environ):
        if name.startswith("MEMORY_WORKER_") or name in ("DSH_HOME", "XDG_DATA_HOME"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _register()
    plain = _from_column(CliRunner().invoke(app, ["config"]).stdout)
    assert (plain["dsh_home"], plain["data_dir"], plain["sessions_root"]) == (
        "default",
        "default",
        "derived",
    )
    env = {"DSH_HOME": str(tmp_path / "dsh"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    result = CliRunner().invoke(app, ["config"], env=env)
    assert result.exit_code == 0, result.output
    shown = _from_column(result.stdout)
    assert (shown["dsh_home"], shown["data_dir"]) == ("env DSH_HOME", "env XDG_DATA_HOME")
    assert (shown["sessions_root"], shown["broker_url"]) == ("derived", "default")
    # An empty variable is ignored by the default, so it is not named either.
    assert (
        _from_column(CliRunner().invoke(app, ["config"], env={"DSH_HOME": ""}).stdout)["dsh_home"]
        == "default"
    )
    # The worker's own variable, a file and an option still win and say so.
    from dsh_memory_worker.worker.settings import load_settings

    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    monkeypatch.setenv("MEMORY_WORKER_DSH_HOME", str(tmp_path / "mw-dsh"))
    config = tmp_path / "worker.toml"
    config.write_text(f'data_dir = "{tmp_path / "file-data"}"\n', encoding="utf-8")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    sources = load_settings(config).value_sources
    assert (sources["dsh_home"], sources["data_dir"]) == ("env", "file")
    assert load_settings(config, dsh_home=tmp_path / "opt").value_sources["dsh_home"] == "option"


@pytest.mark.integration
def test_the_installed_console_script_prints_the_config(env: dict[str, str]) -> None:
    script = Path(sys.executable).with_name("memory-worker")
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")},
        **env,
    }
    done = subprocess.run(
        [str(script), "config", "--json"],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["broker_url"] == "redis://:***@redis:6379/0"
    for secret in SECRETS:
        assert secret not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
        ("amqp://guest:guest@rabbit:5672//", "amqp://guest:***@rabbit:5672//"),
        ("postgresql://u:p%40ss@db/x", "postgresql://u:***@db/x"),
        ("postgresql+psycopg://u@db/x", "postgresql+psycopg://u@db/x"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
        ("rediss://u:p@[::1]:6380/0?ssl=1", "rediss://u:***@[::1]:6380/0?ssl=1"),
    ],
)
def test_mask_url_hides_only_the_password(url: str, shown: str) -> None:
    from dsh_memory_worker.worker.settings import mask_url

    assert mask_url(url) == shown
