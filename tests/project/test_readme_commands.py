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


def _test_line_comment() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    at = next(i for i, line in enumerate(lines) if "pytest" in line and not line.startswith("#"))
    assert lines[at - 1].startswith("# "), "the test line needs its one-line comment above it"
    return lines[at - 1]


def test_the_test_line_names_what_ci_run_provides() -> None:
    """What `.ci/run` starts (the services it waits for) and installs (its apt packages, the
    first of each install) is named on the README's comment line of the test command, which
    points at `bash .ci/run`: a new requirement added to one and not the other fails here."""
    comment = _test_line_comment()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "`bash .ci/run`" in comment
    services = {"5432": "PostgreSQL", "6379": "Redis", "5672": "RabbitMQ"}
    waited = re.findall(r"wait_port (\d+)", ci)
    assert sorted(waited) == sorted(services), waited
    packages = re.findall(r"apt-get install -y -qq ([\w.-]+)", ci)
    assert len(packages) >= 4, packages
    for needed in [services[port] for port in waited] + packages:
        assert re.search(rf"\b{re.escape(needed)}\b", comment), f"{needed} is not named: {comment}"
