"""Every table fits the terminal: with ``COLUMNS=80`` no line of ``status`` (with ``--audit``),
``config``, ``retract --dry-run`` or ``forget --dry-run`` is longer than 80 columns, and a cell's
text is folded, not cut; ``--wide`` prints the table at its natural width (one line per row)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import demo_recorded, memory_worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tables")
    demo_recorded(tmp)
    return tmp


def _sessions(tmp: Path) -> list[str]:
    done = memory_worker(tmp, "status", "--json")
    assert done.returncode == 0, done.stderr
    return [row["session_id"] for row in json.loads(done.stdout)["sessions"]]


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["status", "--audit"],
        ["config"],
        ["retract", "--all", "--dry-run", "--kind", "compact-checkpoint"],
        ["forget", "SESSION", "--dry-run"],
    ],
)
def test_every_table_fits_80_columns(recorded: Path, argv: list[str]) -> None:
    sessions = _sessions(recorded)
    assert len(sessions) >= 2
    argv = [sessions[0] if word == "SESSION" else word for word in argv]
    done = memory_worker(recorded, *argv)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) > 3, done.stdout
    too_long = [line for line in lines if len(line) > 80]
    assert too_long == [], "\n".join(too_long)
    assert "│" in done.stdout or "┃" in done.stdout  # a table was printed


@pytest.mark.parametrize("argv", [["status"], ["config"]])
def test_wide_prints_the_natural_width(recorded: Path, argv: list[str]) -> None:
    narrow = memory_worker(recorded, *argv).stdout.splitlines()
    wide = memory_worker(recorded, *argv, "--wide").stdout.splitlines()
    assert max(len(line) for line in wide) > 80
    assert len(wide) < len(narrow)  # rows no longer wrap
    if argv == ["status"]:
        for sid in _sessions(recorded):
            assert sum(sid in line for line in wide) == 1, sid


def test_status_at_80_columns_keeps_every_session_id_whole_or_folded(recorded: Path) -> None:
    out = memory_worker(recorded, "status").stdout
    cells = "".join(line.split("│")[1].strip() if "│" in line else "" for line in out.splitlines())
    for sid in _sessions(recorded):
        assert sid in cells, sid  # folded across lines, never cut with "…"
    assert "…" not in out
