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
    if argv == ["config"]:
        assert len(wide) < len(narrow)  # rows no longer wrap
    if argv == ["status"]:
        assert len(wide) == len(narrow)  # one line per session either way (short ids)
        for sid in _sessions(recorded):
            assert sum(sid in line for line in wide) == 1, sid


def test_status_at_80_columns_is_one_row_per_session_with_short_ids(recorded: Path) -> None:
    sessions = _sessions(recorded)
    assert len(sessions) == 8
    out = memory_worker(recorded, "status", COLUMNS="80").stdout
    rows = [line for line in out.splitlines() if line.startswith("│ ")]
    assert len(rows) == 8 + 1, out  # one line per session, and the total
    ids = [row.split("│")[1].strip() for row in rows[:8]]
    assert ids == [sid[:8] for sid in sessions]
    assert all(len(line) <= 80 for line in out.splitlines())
    wide = memory_worker(recorded, "status", "--wide").stdout
    assert all(sid in wide for sid in sessions)  # --wide (and --json) show them whole


def test_the_audit_trail_and_a_forgotten_session_use_short_ids(tmp_path: Path) -> None:
    demo_recorded(tmp_path)
    gone = _sessions(tmp_path)[0]
    assert memory_worker(tmp_path, "forget", gone).returncode == 0
    out = memory_worker(tmp_path, "status", "--audit", COLUMNS="80").stdout
    trail, _, table = out.partition("memory-worker status")
    sessions = {line.split("│")[2].strip() for line in trail.splitlines() if "│ 20" in line}
    # the forget rows, and the first-sight seed check of the demo's fork child
    assert gone[:8] in sessions, trail
    assert sessions <= {sid[:8] for sid in _sessions(tmp_path)}, trail
    rows = [line for line in table.splitlines() if line.startswith("│ ")]
    assert len(rows) == 8 + 1, table
    assert rows[0].startswith(f"│ {gone[:8]} (forgotten) ")


def test_status_session_takes_the_short_id_a_table_shows(recorded: Path) -> None:
    sid = _sessions(recorded)[3]
    whole = memory_worker(recorded, "status", "--json", "--audit", "--session", sid)
    short = memory_worker(recorded, "status", "--json", "--audit", "--session", sid[:8])
    assert whole.returncode == short.returncode == 0, short.stderr
    assert [row["session_id"] for row in json.loads(short.stdout)["sessions"]] == [sid]
    assert json.loads(short.stdout) == json.loads(whole.stdout)


def test_short_ids_are_eight_characters_or_the_shortest_unique_prefix() -> None:
    from dsh_memory_worker.worker.commands.tables import short_ids

    ids = ["abcdefgh-1111", "abcdefgh-1122", "12345678-aaaa", "short", "12345678"]
    assert short_ids(ids) == {
        "abcdefgh-1111": "abcdefgh-111",
        "abcdefgh-1122": "abcdefgh-112",
        "12345678-aaaa": "12345678-",
        "short": "short",
        "12345678": "12345678",
    }


def test_status_on_a_fresh_empty_home_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    done = memory_worker(tmp_path, "status", "--dsh-home", str(tmp_path / "dsh"), COLUMNS="80")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("memory-worker status: nothing recorded yet")


def test_status_on_a_recorded_home_with_no_session_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    assert memory_worker(tmp_path, "run", "--once").returncode == 0  # makes the state database
    done = memory_worker(tmp_path, "status", COLUMNS="80")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == (
        "",
        "memory-worker status: no sessions seen yet (run `memory-worker run` or `daemon`)\n",
    )
