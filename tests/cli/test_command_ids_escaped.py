"""Terminal injection through the operator commands: a session id holding a newline and an ANSI
escape, given to ``forget``, ``retract``, ``reconsolidate``, ``relog`` and then reported by
``verify-forgetting``, comes out as one line with the characters escaped (``\\n``, ``\\x1b``),
never raw — every human-facing line goes through :func:`memory.printable.printable`."""

from __future__ import annotations

from pathlib import Path

import pytest
from forked_worker import run_worker_forked
from hostile_support import env, write_good

EVIL = "evil\n\x1b[31mERROR forged line"
SHOWN = "evil\\n\\x1b[31mERROR forged line"


def _one_escaped_line(output: str) -> None:
    """Each line naming the id holds all of it, escaped: no raw ESC, no forged second line."""
    assert "\x1b" not in output
    assert "\r" not in output
    lines = output.splitlines()
    hits = [line for line in lines if "evil" in line]
    assert hits, output
    assert all(SHOWN in line for line in hits + [ln for ln in lines if "ERROR forged" in ln]), (
        output
    )


@pytest.mark.integration
def test_commands_print_an_evil_id_escaped_on_one_line(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    write_good(home, "good", 1)
    environ = env(tmp_path, DSH_HOME=str(home))
    done = run_worker_forked(tmp_path, "run", "--once", environ=environ)
    assert done.returncode == 0, done.stderr
    commands = {
        "retract": (["retract", EVIL], 1),
        "reconsolidate": (["reconsolidate", EVIL], 1),
        "relog": (["relog", "--wait", EVIL], 1),
        "reconsolidate --replace": (["reconsolidate", "--replace", "--wait", EVIL], 1),
        "forget": (["forget", EVIL], 0),  # an unseen id is marked forgotten
        "verify-forgetting": (["verify-forgetting"], 0),  # names the forgotten id, log gone
    }
    for name, (args, code) in commands.items():
        out = run_worker_forked(tmp_path, *args, environ=environ)
        assert out.returncode == code, (name, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr, (name, out.stderr)
        _one_escaped_line(out.stdout + out.stderr)
    shown = run_worker_forked(tmp_path, "status", "--json", environ=environ)
    assert '"session_id": "evil\\n\\u001b[31mERROR forged line"' in shown.stdout
