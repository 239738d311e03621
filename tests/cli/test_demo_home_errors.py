"""`memory-worker demo-home` into a place it cannot write is one error line and exit status 1,
not a traceback."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app


def test_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    _register()
    result = CliRunner().invoke(app, ["demo-home", str(blocker / "dsh")])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert lines == [f"error: cannot write the DSH home under {blocker / 'dsh'}: Not a directory"]


def test_writable_directory_still_gets_every_fixture(tmp_path: Path) -> None:
    _register()
    result = CliRunner().invoke(app, ["demo-home", str(tmp_path / "dsh")])
    assert result.exit_code == 0
    assert len(list((tmp_path / "dsh" / "sessions").glob("*/*/session*.jsonl"))) == 8


def test_long_paths_stay_on_one_line(tmp_path: Path) -> None:
    target = tmp_path / ("a-rather-long-directory-name-" * 3) / "[demo]"
    _register()
    result = CliRunner().invoke(app, ["demo-home", str(target)], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert result.output.splitlines() == [f"wrote 8 session logs under {target / 'sessions'}"]
