"""The Dockerfile installs the dependencies before it copies the code, so a code change rebuilds
only the last layers: no Docker engine runs here, so the file is parsed (continuation lines
joined) and its instructions' order checked; the step that lists the dependencies is run for real
on the two ``pyproject.toml`` files and must print exactly the worker's runtime and
``distributed`` requirements (hypatia-lite aside: it is built from the checkout) and
hypatia-lite's runtime requirements."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CODE = {
    "dsh_memory_worker",
    "memory",
    "worker",
    "hypatia-lite/hypatia_lite",
    "migrations",
    "setup.py",
}
#: What the dependency layer may copy: the requirements and their pins, nothing of the code.
DEPENDENCY_FILES = {"pyproject.toml", "hypatia-lite/pyproject.toml", "constraints.txt"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order; comments dropped, ``\\`` continuations joined."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def layer_problems(text: str) -> list[str]:
    """What is wrong with the order of ``text``'s instructions (empty: nothing)."""
    steps = instructions(text)
    copies = [(i, shlex.split(args)[:-1]) for i, (kw, args) in enumerate(steps) if kw == "COPY"]
    installs = [i for i, (kw, args) in enumerate(steps) if kw == "RUN" and "pip install" in args]
    code_copied = min(
        (i for i, sources in copies if CODE & {s.rstrip("/") for s in sources}), default=None
    )
    problems = []
    if code_copied is None:
        return ["the code is never copied"]
    deps = [i for i in installs if i < code_copied]
    if not deps:
        problems.append("no dependency install before the code is copied")
    elif "-c constraints.txt" not in steps[deps[0]][1]:
        problems.append("the dependency install does not use constraints.txt")
    early = {s for i, sources in copies if i < code_copied for s in sources}
    if early != DEPENDENCY_FILES:
        problems.append(f"the dependency layer copies {sorted(early)}")
    late = [i for i in installs if i > code_copied]
    if not late or "--no-deps" not in steps[late[0]][1]:
        problems.append("the package is not installed with --no-deps after the code")
    return problems


def test_the_dependencies_are_installed_before_the_code_is_copied() -> None:
    assert layer_problems((REPO / "Dockerfile").read_text(encoding="utf-8")) == []


def test_the_old_order_is_caught() -> None:
    old = (
        "FROM python:3.11-slim\nCOPY pyproject.toml README.md ./\nCOPY memory ./memory\n"
        'COPY worker ./worker\nRUN pip install ".[distributed]" \\\n    && useradd memory\n'
    )
    assert layer_problems(old) == [
        "no dependency install before the code is copied",
        "the dependency layer copies ['README.md', 'pyproject.toml']",
        "the package is not installed with --no-deps after the code",
    ]


def test_every_copied_path_exists_and_is_not_ignored() -> None:
    ignored = set((REPO / ".dockerignore").read_text(encoding="utf-8").split())
    for keyword, args in instructions((REPO / "Dockerfile").read_text(encoding="utf-8")):
        if keyword == "COPY":
            for source in shlex.split(args)[:-1]:
                assert (REPO / source).exists(), source
                assert source not in ignored, source


@pytest.mark.integration
def test_the_dependency_list_is_pyprojects(tmp_path: Path) -> None:
    """Run the image's `python -c …` that writes /tmp/requirements.txt on this pyproject.toml."""
    step = next(
        args
        for kw, args in instructions((REPO / "Dockerfile").read_text(encoding="utf-8"))
        if kw == "RUN" and "tomllib" in args
    )
    command = step.split(">", 1)[0]
    for name in ("pyproject.toml", "hypatia-lite/pyproject.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    words = shlex.split(command)
    assert words[:2] == ["python", "-c"], words
    printed = subprocess.run(
        [sys.executable, "-c", words[2]],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lite = tomllib.loads((REPO / "hypatia-lite/pyproject.toml").read_text(encoding="utf-8"))
    worker = [d for d in project["dependencies"] if not d.startswith("hypatia-lite")]
    assert len(worker) == len(project["dependencies"]) - 1
    distributed = project["optional-dependencies"]["distributed"]
    assert printed == worker + distributed + lite["project"]["dependencies"]
    assert any(line.startswith("openai") for line in printed)
    assert any(line.startswith("sqlean-py") for line in printed)
