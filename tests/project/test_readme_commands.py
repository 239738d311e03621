"""The README's first lines give the two fresh-machine commands; CI must run the second verbatim."""

from __future__ import annotations

import re

from conftest import REPO


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None, "README must start with a bash block holding the two commands"
    assert text.index("```bash") < 40, "the commands must be the README's first lines"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def test_readme_gives_exactly_two_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    assert "pip install" in commands[0] and "memory-worker" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = _readme_commands()[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
