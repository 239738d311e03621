"""The README's first-run section runs as written after its first line, on a machine where the
project's commands are NOT on ``PATH`` (only the ``.venv/`` the first line made has them); its
start-over line removes what the run made, and the run works again after it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from doc_blocks import Sandbox, blocks

pytestmark = pytest.mark.integration


def _section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def _run(line: str, box: Sandbox, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    text = re.sub(r"(?<![\w./~-])/tmp/", f"{box.tmp}/", line)
    done = subprocess.run(
        ["bash", "-c", text], env=env, cwd=box.work, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, (line, done.stderr)
    return done


def test_first_run_section_runs_as_written_after_the_first_line(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    box.make()
    shims = box.env["PATH"].split(":")[0]
    env = {**box.env, "PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin"}  # no memory-worker
    assert subprocess.run(["bash", "-c", "command -v memory-worker"], env=env).returncode == 1
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_line = re.search(r"```bash\n#[^\n]*\n([^\n]+)\n", readme)
    assert first_line is not None
    _run(first_line.group(1), box, env)

    section = _section("First run on the shipped fixtures")
    [run_block] = [b.statements() for b in blocks(REPO, "README.md") if b.text.strip() in section]
    start_over = re.findall(r"To\s+start\s+over:\s+`([^`]+)`", section)
    assert start_over and start_over[0].startswith("rm -rf "), section
    for line in run_block:
        shown = _run(line, box, env)
    assert shown.stdout.count('"name": "session-') == 7, shown.stdout
    home = box.home
    made = [home / ".hypatia-lite", home / ".local" / "share" / "dsh-memory-worker" / "state.db"]
    assert all(path.exists() for path in made)
    assert "~/.hypatia-lite" in section and "~/.local/share/dsh-memory-worker/state.db" in section

    for line in start_over:
        _run(line, box, env)
    assert not any(path.exists() for path in made) and not (box.tmp / "dsh-demo").exists()
    for line in run_block:
        shown = _run(line, box, env)
    assert shown.stdout.count('"name": "session-') == 7
