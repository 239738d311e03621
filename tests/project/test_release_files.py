"""The release files stay true to the repository: CONTRIBUTING.md's commands name what exists
(the README's test command verbatim, the static checks' folders, the test paths, benchmarks and
generators), SECURITY.md supports the current minor version and points at the repository's
private reporting, the changelog's newest release is this version, and the README links all
three."""

from __future__ import annotations

import importlib.util
import re
import runpy
import shlex
import tomllib

from conftest import REPO

from dsh_memory_worker import __version__

FENCE = re.compile(r"^```(?:sh|bash)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _commands(doc: str) -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    return [
        line.strip()
        for block in FENCE.findall(text)
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _readme_test_command() -> str:
    block = FENCE.search((REPO / "README.md").read_text(encoding="utf-8"))
    assert block is not None
    return next(line for line in block.group(1).splitlines() if "pytest" in line)


def test_contributing_sets_up_with_the_readme_test_command() -> None:
    assert _readme_test_command() in _commands("CONTRIBUTING.md"), (
        "CONTRIBUTING.md's set-up block must hold the README's test command verbatim"
    )


def test_contributing_runs_the_static_checks_on_the_folders_the_suite_checks() -> None:
    code = runpy.run_path(str(REPO / "tests/project/test_static_checks.py"))["CODE"]
    ruff = [c for c in _commands("CONTRIBUTING.md") if c.startswith(".venv/bin/ruff ")]
    assert len(ruff) == 2
    for command in ruff:
        words = shlex.split(command)
        assert tuple(w for w in words[2:] if not w.startswith("-")) == code, command
    assert ".venv/bin/python tests/support/typecheck.py" in _commands("CONTRIBUTING.md")


def test_every_path_and_module_contributing_runs_exists() -> None:
    commands = _commands("CONTRIBUTING.md")
    assert len(commands) >= 10
    named = 0
    for command in commands:
        words = shlex.split(command, comments=True)
        for at, word in enumerate(words):
            if re.match(r"(tests|benchmarks|deploy|\.ci)/", word) or word == "constraints.txt":
                assert (REPO / word).exists(), f"{command}: no {word}"
                named += 1
            if word == "-m" and at > 0 and words[at - 1].endswith("python"):
                module = words[at + 1]
                if module != "pytest":
                    assert importlib.util.find_spec(module) is not None, command
                    named += 1
    assert named >= 8
    # the unit loop stops at the first failure; the generators are the two documented ones
    assert any("pytest" in c and " -x " in c for c in commands)
    assert ".venv/bin/python deploy/constraints.py > constraints.txt" in commands
    assert ".venv/bin/python -m dsh_memory_worker.worker.state.write_template" in commands


def test_security_supports_this_minor_version_and_reports_privately() -> None:
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    major, minor, _ = __version__.split(".", 2)
    assert f"| {major}.{minor}.x | yes" in text
    urls = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert f"<{urls['Source']}/security/advisories/new>" in text
    assert "@" not in text.split("## Reporting a vulnerability")[1].split("##")[0]  # no e-mail


def test_the_changelog_releases_this_version_under_an_empty_unreleased_section() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", text, re.M)
    assert headings[0] == ("Unreleased", "")
    assert re.fullmatch(r" - \d{4}-\d{2}-\d{2}", headings[1][1]), headings[1]
    assert headings[1][0] == __version__
    unreleased = text.split("## [Unreleased]\n", 1)[1].split("## [", 1)[0]
    assert unreleased.strip() == ""
    for name, _ in headings:  # Keep a Changelog: each heading is a link defined at the bottom
        assert re.search(rf"^\[{re.escape(name)}\]: https://\S+$", text, re.M), name


def test_the_readme_links_the_release_files() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ("CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md"):
        assert f"]({name})" in readme, name
