"""Session discovery under a DSH home: generations, escaped ids, ignored files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory_worker.memory.dsh.locate import decode_segment, discover_sessions, dsh_sessions_root


def test_sessions_root_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    assert dsh_sessions_root() == tmp_path / "sessions"
    monkeypatch.setenv("DSH_HOME", "  ")
    assert dsh_sessions_root() == Path.home() / ".dsh" / "sessions"
    assert dsh_sessions_root("/opt/dsh") == Path("/opt/dsh/sessions")


def test_decode_segment() -> None:
    assert decode_segment("~002E~002E") == ".."
    assert decode_segment("a~0020b~007Ec") == "a b~c"
    assert decode_segment("7d3c1f0e-2b6a") == "7d3c1f0e-2b6a"


def test_discover_picks_highest_generation(tmp_path: Path) -> None:
    project = tmp_path / "--home-dev-widget--"
    one = project / "sess~002E1"
    one.mkdir(parents=True)
    for name in (
        "session.jsonl.zstd",
        "session.v3.jsonl.zstd",
        "session.v4.jsonl.zstd",
        "session.lock",
        "session.v5.jsonl.zstd.0123456789ab.tmp",
        "session.v05.jsonl",
    ):
        (one / name).write_bytes(b"")  # fmt: skip
    two = project / "plain"
    two.mkdir()
    (two / "session.jsonl").write_bytes(b"")
    (project / "only-lock").mkdir()
    (project / "only-lock" / "session.lock").write_bytes(b"")
    found = discover_sessions(tmp_path)
    assert [(s.session_id, s.path.name, s.generation, s.compressed) for s in found] == [
        ("plain", "session.jsonl", 0, False),
        ("sess.1", "session.v4.jsonl.zstd", 4, True),
    ]
    assert found[1].project_dir == project and found[1].directory == one


def test_not_a_directory_is_empty(tmp_path: Path) -> None:
    assert discover_sessions(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    assert discover_sessions(tmp_path / "file") == []
