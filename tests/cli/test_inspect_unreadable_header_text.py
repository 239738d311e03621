"""`memory-worker inspect` on a log whose header cannot be read prints dashes and a plain
label, never Python's `None`, and still exits 1 with the problem line."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app


def test_unreadable_header_prints_no_none(tmp_path: Path) -> None:
    bad = tmp_path / "session.jsonl"
    bad.write_text("garbage\n")
    _register()
    result = CliRunner().invoke(app, ["inspect", str(bad)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"(header unreadable)  {bad}",
        "  version -  cwd -  parent -  inherited 0  events 0  open turn no",
        "  problem corrupt: the header line is not valid JSON",
    ]
