"""Settings come from defaults, a TOML file and MEMORY_WORKER_* env, in that rising order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_memory_worker.worker.settings import (
    DEFAULT_WITHDRAWAL_KINDS,
    Settings,
    SettingsError,
    load_settings,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("MEMORY_WORKER_") or name in ("DSH_HOME", "XDG_DATA_HOME"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    return home


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "worker.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(clean_env: Path) -> None:
    s = load_settings()
    assert s.dsh_home == clean_env / ".dsh"
    assert s.sessions_root == clean_env / ".dsh" / "sessions"
    assert s.data_dir == clean_env / ".local" / "share" / "dsh-memory-worker"
    assert s.state_url is None
    assert s.effective_state_url == f"sqlite:///{s.data_dir}/state.db"
    assert s.broker_url == "redis://127.0.0.1:6379/0"
    assert s.result_backend is None
    assert (s.store_transport, s.store_binary, s.store_shelf, s.store_timeout_s) == (
        "lite",
        "hypatia",
        "default",
        30.0,
    )
    assert s.withdrawal_kinds == ["dsh-rewind", "plugin:dsh-rewind", "plugin:rollback"]
    assert list(DEFAULT_WITHDRAWAL_KINDS) == s.withdrawal_kinds
    assert (s.flush_window_s, s.idle_close_s, s.poll_interval_s, s.reconcile_interval_s) == (
        120.0,
        600.0,
        1.0,
        30.0,
    )
    assert (s.lease_ttl_s, s.task_max_retries, s.retry_backoff_s) == (300.0, 2, 5.0)
    assert (s.check_every_turns, s.min_new_tokens, s.max_input_tokens, s.max_output_tokens) == (
        5,
        3000,
        16000,
        2000,
    )
    assert (s.max_work_units_per_run, s.dedup_candidates, s.dedup_max_distance) == (3, 5, 0.45)
    assert (s.cascade_batch_size, s.model_timeout_s) == (16, 120.0)
    assert s.model_routes == []
    assert (s.tool_ledger, s.log_json, s.metrics_port, s.timezone) == (False, False, None, None)


def test_dsh_home_and_xdg_data_home_move_the_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    s = load_settings()
    assert s.sessions_root == tmp_path / "dsh" / "sessions"
    assert s.effective_state_url == f"sqlite:///{tmp_path}/xdg/dsh-memory-worker/state.db"


def test_env_sets_scalars_lists_and_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_FLUSH_WINDOW_S", "45")
    monkeypatch.setenv("MEMORY_WORKER_STORE_TRANSPORT", "mcp")
    monkeypatch.setenv("MEMORY_WORKER_TOOL_LEDGER", "true")
    monkeypatch.setenv("MEMORY_WORKER_WITHDRAWAL_KINDS", "dsh-rewind, plugin:undo ,dsh-rewind")
    monkeypatch.setenv(
        "MEMORY_WORKER_MODEL_ROUTES",
        '[{"base_url": "http://127.0.0.1:8000/v1", "model": "m1", "api_key_env": "K1",'
        ' "reasoning_effort": "high"}]',
    )
    monkeypatch.setenv("K1", "sk-from-env")
    s = load_settings()
    assert s.flush_window_s == 45.0
    assert s.store_transport == "mcp"
    assert s.tool_ledger is True
    assert s.withdrawal_kinds == ["dsh-rewind", "plugin:undo"]
    assert [(r.base_url, r.model, r.reasoning_effort) for r in s.model_routes] == [
        ("http://127.0.0.1:8000/v1", "m1", "high")
    ]
    assert s.route_api_key(s.model_routes[0]) == "sk-from-env"


def test_log_level_and_transport_ignore_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_LOG_LEVEL", "debug")
    monkeypatch.setenv("MEMORY_WORKER_STORE_TRANSPORT", " CLI ")
    s = load_settings()
    assert (s.log_level, s.store_transport) == ("DEBUG", "cli")


def test_withdrawal_kinds_also_accept_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_WITHDRAWAL_KINDS", '["plugin:rollback"]')
    assert load_settings().withdrawal_kinds == ["plugin:rollback"]


def test_file_values_apply_and_env_overrides_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _write(
        tmp_path,
        """
flush_window_s = 60
idle_close_s = 900
store_shelf = "work"
withdrawal_kinds = ["dsh-rewind"]
state_url = "postgresql://mw:pw@db:5432/mw"

[[model_routes]]
base_url = "https://api.deepseek.com"
model = "deepseek-chat"
api_key_env = "DEEPSEEK_API_KEY"

[[model_routes]]
base_url = "http://127.0.0.1:8000/v1"
model = "local"
api_key = "sk-inline"
reasoning_effort = "off"
""",
    )
    monkeypatch.setenv("MEMORY_WORKER_IDLE_CLOSE_S", "30")
    s = load_settings(path)
    assert s.flush_window_s == 60.0
    assert s.idle_close_s == 30.0
    assert s.store_shelf == "work"
    assert s.withdrawal_kinds == ["dsh-rewind"]
    assert s.effective_state_url == "postgresql://mw:pw@db:5432/mw"
    assert [r.model for r in s.model_routes] == ["deepseek-chat", "local"]
    assert s.route_api_key(s.model_routes[0]) is None  # DEEPSEEK_API_KEY is not set
    assert s.route_api_key(s.model_routes[1]) == "sk-inline"
    assert s.model_routes[1].reasoning_effort == "off"


def test_the_config_env_var_names_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORY_WORKER_CONFIG", str(_write(tmp_path, "poll_interval_s = 0.5\n")))
    assert load_settings().poll_interval_s == 0.5


def test_keyword_overrides_beat_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_LEASE_TTL_S", "100")
    assert load_settings(lease_ttl_s=50).lease_ttl_s == 50.0


@pytest.mark.parametrize(
    ("env", "value", "expected"),
    [
        ("FLUSH_WINDOW_S", "601", "flush_window_s: Input should be less than or equal to 600"),
        ("STORE_TRANSPORT", "http", "store_transport: Input should be 'lite', 'cli' or 'mcp'"),
        ("STORE_SHELF", "my shelf", "store_shelf: String should match pattern"),
        ("TIMEZONE", "Mars/Olympus", "timezone: Value error, unknown time zone 'Mars/Olympus'"),
        ("BROKER_URL", "localhost:6379", "broker_url: Value error, not a URL"),
        ("BROKER_URL", "", "broker_url: Value error, must not be empty"),
        ("METRICS_PORT", "70000", "metrics_port: Input should be less than or equal to 65535"),
        ("CHECK_EVERY_TURNS", "0", "check_every_turns: Input should be greater than or equal to 1"),
    ],
)
def test_bad_values_give_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(f"MEMORY_WORKER_{env}", value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("invalid configuration: ")
    assert expected in message
    assert f"(set by MEMORY_WORKER_{env})" in message


def test_file_problems_give_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(SettingsError, match=f"^config file {missing} does not exist$"):
        load_settings(missing)
    broken = _write(tmp_path, "flush_window_s = = 3\n")
    with pytest.raises(SettingsError, match=f"^config file {broken} is not valid TOML: "):
        load_settings(broken)
    typo = _write(tmp_path, "flush_window = 3\nidle_close = 4\n")
    with pytest.raises(SettingsError, match=r"unknown setting\(s\) flush_window, idle_close \(see"):
        load_settings(typo)
    bad_route = _write(tmp_path, '[[model_routes]]\nbase_url = "http://x"\n')
    with pytest.raises(SettingsError, match=r"model_routes\.0\.model: Field required") as info:
        load_settings(bad_route)
    assert f"or {bad_route})" in str(info.value)
    keyless = _write(tmp_path, '[[model_routes]]\nbase_url = "http://x"\nmodel = "m"\n')
    with pytest.raises(
        SettingsError,
        match=r"model_routes\.0: Value error, a model route needs "
        r"`api_key_env` \(or an inline `api_key`\)",
    ):
        load_settings(keyless)


def test_settings_are_immutable() -> None:
    s = load_settings()
    with pytest.raises(ValueError, match="frozen"):
        s.flush_window_s = 1  # type: ignore[misc]
    assert isinstance(s, Settings)


def test_settings_is_the_only_module_reading_the_environment() -> None:
    root = Path(__file__).resolve().parents[2] / "worker"
    readers = sorted(
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if "os.environ" in path.read_text(encoding="utf-8")
        or "getenv(" in path.read_text(encoding="utf-8")
    )
    # worker/at_rest.py digests the whole environment to name a configuration before settings
    # load (and finds its record directory and hypatia-lite's home as the store does); it takes
    # no setting from it.
    assert readers == ["worker/at_rest.py", "worker/settings.py"]


def _setting_rows(path: Path) -> dict[str, str]:
    """`| `name` | default | meaning |` rows of a markdown file, by name."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows[cells[0].strip("`")] = line
    return rows


_REPO = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented_with_its_default() -> None:
    rows = {
        name: [cell.strip() for cell in line.strip().strip("|").split("|")][1]
        for name, line in _setting_rows(_REPO / "docs" / "configuration.md").items()
    }
    assert set(rows) - {
        "sessions",
        "progress",
        "leases",
        "retractions",
        "audit",
        "failures",
        "model_calls",
    } == set(Settings.model_fields)
    defaults = Settings.model_fields
    for name, shown in rows.items():
        if name not in defaults or defaults[name].default_factory is not None:
            continue
        value = defaults[name].default
        shown = shown.split(" (", 1)[0] if shown.startswith("`") else shown  # `67108864` (64 MiB)
        if value is None:
            assert (
                shown.startswith("unset")
                or shown.startswith("`sqlite:///")
                or shown == "the checkout's `migrations/`"
            ), name
        elif isinstance(value, bool):
            assert shown == f"`{str(value).lower()}`", name
        elif isinstance(value, float) and value.is_integer():
            assert shown in (f"`{int(value)}`", f"`{value}`"), name
        else:
            assert shown == f"`{value}`", name


def test_the_readme_settings_table_repeats_the_reference_rows() -> None:
    """The README's short table shows real settings, each row exactly as docs/configuration.md."""
    reference = _setting_rows(_REPO / "docs" / "configuration.md")
    shown = _setting_rows(_REPO / "README.md")
    assert {"state_url", "broker_url", "store_transport", "model_routes"} <= set(shown)
    assert set(shown) <= set(Settings.model_fields)
    for name, line in shown.items():
        assert line == reference[name], name


def test_each_value_knows_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _write(tmp_path, "flush_window_s = 60\nidle_close_s = 900\n")
    monkeypatch.setenv("MEMORY_WORKER_IDLE_CLOSE_S", "30")
    sources = load_settings(path, lease_ttl_s=50).value_sources
    assert sources["flush_window_s"] == "file"
    assert sources["idle_close_s"] == "env"
    assert sources["lease_ttl_s"] == "option"
    assert sources["broker_url"] == "default"
    assert set(sources) == set(Settings.model_fields)
    assert Settings().value_sources == {}


def test_config_table_shows_the_source_column(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from dsh_memory_worker.worker.cli import _register, app

    _register()
    monkeypatch.setenv("MEMORY_WORKER_POLL_INTERVAL_S", "2")
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
        for line in result.output.splitlines()
        if line.count("│") == 4
    }
    assert rows["poll_interval_s"] == ["2.0", "env"]
    assert rows["lease_ttl_s"] == ["300.0", "default"]
    assert rows["sessions_root"][1] == "derived"


def test_bad_option_value_is_blamed_on_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_WORKER_STORE_SHELF", raising=False)
    with pytest.raises(SettingsError) as info:
        load_settings(store_shelf="my shelf")
    message = str(info.value)
    assert message.startswith("invalid configuration: store_shelf: String should match pattern")
    assert message.endswith("(set by a command-line option)")


def test_env_value_that_is_not_json_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKER_MODEL_ROUTES", "not json")
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert str(info.value) == (
        "invalid configuration: model_routes: not valid JSON (Expecting value at char 0) "
        "(set by MEMORY_WORKER_MODEL_ROUTES)"
    )
