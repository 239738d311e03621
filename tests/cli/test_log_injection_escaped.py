"""Log and terminal injection: a session id (its directory name) holding a newline cannot forge a
second log line, and one holding ANSI escapes is shown escaped by ``status``; every plain log
line goes through one escaping function (JSON logs escape by themselves)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from forked_worker import run_worker_forked
from hostile_support import session_path, write_good

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.logs import PrintableFormatter, json_formatter

EVIL = "evil\n2026-01-01 00:00:00,000 ERROR forged\x1b[2J\x1b[31m\u202e"


def test_printable_escapes_controls_bidi_and_separators_only() -> None:
    assert printable("a\nb\r\tc\x00\x1b[31m\x7f\x85\u2028\u202e\u2066\udcff") == (
        "a\\nb\\r\\tc\\x00\\x1b[31m\\x7f\\x85\\u2028\\u202e\\u2066\\udcff"
    )
    assert printable("plain é ✓ 日本 ~/path with spaces") == "plain é ✓ 日本 ~/path with spaces"
    assert printable(42) == "42"


def test_plain_log_lines_stay_one_line_and_json_lines_are_json() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("memory_worker.test_injection")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("session %s: damaged", EVIL)
        handler.setFormatter(json_formatter())
        logger.warning("session %s: damaged", EVIL)
    finally:
        logger.removeHandler(handler)
    plain, as_json = out.getvalue().splitlines()
    assert plain == f"WARNING session {printable(EVIL)}: damaged"
    assert json.loads(as_json)["message"] == f"session {EVIL}: damaged"


@pytest.mark.integration
def test_a_hostile_session_id_forges_no_line_and_no_terminal_escape(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    log = write_good(home, EVIL, 1)
    assert log == session_path(home, EVIL)
    with log.open("ab") as handle:
        handle.write(b"not json at all\n")  # a damaged tail: one warning naming the session
    done = run_worker_forked(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert done.returncode == 0, done.stderr
    named = [line for line in done.lines if "evil" in line]
    assert len(named) == 1 and "damaged tail was dropped" in named[0]
    assert printable(EVIL) in named[0]
    assert not [line for line in done.lines if "forged" in line and "evil" not in line]
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr

    table = run_worker_forked(tmp_path, "status", "--dsh-home", str(home))
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "\u202e" not in table.stdout
    assert "\\x1b[2J" in table.stdout and "forged" in table.stdout
    rows = json.loads(run_worker_forked(tmp_path, "status", "--json").stdout)["sessions"]
    assert [row["session_id"] for row in rows] == [EVIL]  # JSON keeps the id exactly
    assert rows[0]["lag"] == 0 and rows[0]["last_failure"]["task"] == "scan"
