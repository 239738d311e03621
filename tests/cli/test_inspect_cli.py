"""``memory-worker inspect`` prints every session, reports bad files, keeps a stable JSON form."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app

_register()
runner = CliRunner()


def _home(tmp_path: Path, fixtures: Path) -> Path:
    project = tmp_path / "home" / "sessions" / "--home-dev-widget--"
    good = project / "7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10"
    good.mkdir(parents=True)
    shutil.copy(fixtures / "v4-example/session.v4.jsonl.zstd", good / "session.v4.jsonl.zstd")
    bad = project / "broken"
    bad.mkdir()
    (bad / "session.v4.jsonl.zstd").write_bytes(b"not zstd at all")
    return tmp_path / "home"


def test_inspect_json_over_a_dsh_home(tmp_path: Path, fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["inspect", str(_home(tmp_path, fixtures_dir)), "--json"])
    assert result.exit_code == 0, result.output
    sessions = json.loads(result.output)["sessions"]
    assert [s["id"] for s in sessions] == ["7d3c1f0e-2b6a-4c59-9e1d-5a8f3b2c4d10", None]
    good, broken = sessions
    assert broken["problems"] == ["corrupt: not a zstd frame (bad magic number) at byte 0"]
    assert good["version"] == 4 and good["events"] == 69 and good["inherited"] == 0
    assert good["cwd"] == "/home/dev/widget" and good["parent"] is None
    assert good["open_turn"] is False and good["problems"] == []
    assert [h["seq"] for h in good["human_messages"]] == [5, 23, 47, 63]
    assert good["replacements"] == [
        {"seq": 33, "kind": "compact-checkpoint", "op_start": 5, "op_end": 15,
         "shadowed": [31, 32, 5, 6, 10, 12, 15]},
        {"seq": 55, "kind": "compact-checkpoint", "op_start": 33, "op_end": 27,
         "shadowed": [53, 54, 33, 23, 25, 27]},
        {"seq": 58, "kind": "dsh-rewind", "op_start": 47, "op_end": 49, "shadowed": [47, 48, 49]},
    ]  # fmt: skip
    assert [c["seq"] for c in good["compaction_checkpoints"]] == [33, 55]


def test_inspect_text_fork_child(fixtures_dir: Path) -> None:
    path = fixtures_dir / "subagent-fork-in-process/session.1.jsonl"
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0
    assert "inherited 42" in result.output and "events 99" in result.output
    assert "parent 96cf59c9-b347-48b9-b234-a5200913ad05" in result.output
    assert "delegated prompt: seq 49" in result.output


def test_inspect_nothing_readable_exits_nonzero(tmp_path: Path) -> None:
    bad = tmp_path / "session.jsonl"
    bad.write_text("garbage\n")
    result = runner.invoke(app, ["inspect", str(bad), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["sessions"][0]["problems"] == [
        "corrupt: the header line is not valid JSON"
    ]
    assert runner.invoke(app, ["inspect", str(tmp_path / "none")]).exit_code == 1


@pytest.fixture
def no_worker_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("MEMORY_WORKER_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_invalid_setting_is_one_line_and_exit_2(
    fixtures_dir: Path, no_worker_env: pytest.MonkeyPatch
) -> None:
    """No silent fall-back to the default withdrawal kinds: the decisions would not be the
    worker's (which refuses to start with the same setting)."""
    no_worker_env.setenv("MEMORY_WORKER_WITHDRAWAL_KINDS", "[dsh-rewind")
    log = fixtures_dir / "v4-example" / "session.v4.jsonl"
    for args in ([str(log)], [str(log), "--json"], [str(fixtures_dir / "no-such-dir")]):
        result = runner.invoke(app, ["inspect", *args])
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            "memory-worker: invalid configuration: withdrawal_kinds: Value error, Expecting "
            "value: line 1 column 2 (char 1) (set by MEMORY_WORKER_WITHDRAWAL_KINDS)"
        ]


def test_broken_config_file_is_one_line_and_exit_2(
    tmp_path: Path, fixtures_dir: Path, no_worker_env: pytest.MonkeyPatch
) -> None:
    log = str(fixtures_dir / "v4-example" / "session.v4.jsonl")
    missing = tmp_path / "nope.toml"
    no_worker_env.setenv("MEMORY_WORKER_CONFIG", str(missing))
    result = runner.invoke(app, ["inspect", log])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [f"memory-worker: config file {missing} does not exist"]
    no_worker_env.delenv("MEMORY_WORKER_CONFIG")
    broken = tmp_path / "worker.toml"
    broken.write_text("withdrawal_kinds = [\n", encoding="utf-8")
    result = runner.invoke(app, ["inspect", log, "--config", str(broken)])
    assert (result.exit_code, result.stdout) == (2, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"memory-worker: config file {broken} is not valid TOML: ")


def test_config_option_sets_the_withdrawal_kinds(
    tmp_path: Path, fixtures_dir: Path, no_worker_env: pytest.MonkeyPatch
) -> None:
    log = str(fixtures_dir / "v4-example" / "session.v4.jsonl")
    config = tmp_path / "worker.toml"
    config.write_text('withdrawal_kinds = ["plugin:rollback"]\n', encoding="utf-8")
    by_default = json.loads(runner.invoke(app, ["inspect", log, "--json"]).stdout)
    assert [w["seq"] for w in by_default["sessions"][0]["withdrawals"]] == [58]
    result = runner.invoke(app, ["inspect", log, "--json", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"][0]["withdrawals"] == []


@pytest.mark.integration
def test_inspect_console_script(fixtures_dir: Path) -> None:
    exe = Path(sys.executable).parent / "memory-worker"
    out = subprocess.run(
        [str(exe), "inspect", str(fixtures_dir / "compaction-recovery"), "--json"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    (session,) = json.loads(out.stdout)["sessions"]
    assert session["replacements"][0]["kind"] == "compact-checkpoint"
    assert session["replacements"][0]["shadowed"] == [19, 20, 4]
