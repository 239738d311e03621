"""``constraints.txt`` (what the Docker image installs from) pins every runtime dependency that
``pyproject.toml`` declares — the base set and the ``distributed`` extra — and every one
``hypatia-lite/pyproject.toml`` declares to one version inside the declared bounds, and every
distribution of the runtime closure installed here (``deploy/constraints.py`` lists it); it pins
no dev tool, and not hypatia-lite (built from this repository). It is exactly what that script
prints in the venv the tests run in (installed with ``-c constraints.txt``, as the README and CI
do): any pin added, removed or changed fails, with the command that writes the file again."""

from __future__ import annotations

import io
import runpy
import tomllib
from contextlib import redirect_stdout
from importlib.metadata import PathDistribution, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
FIX = ".venv/bin/python deploy/constraints.py > constraints.txt"


def _parse(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, equals, version = line.partition("==")
            assert equals and version.strip(), f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _pins() -> dict[str, str]:
    return _parse((REPO / "constraints.txt").read_text(encoding="utf-8"))


def _regenerated() -> str:
    """What ``deploy/constraints.py`` prints in this venv."""
    out = io.StringIO()
    with redirect_stdout(out):
        runpy.run_path(str(REPO / "deploy" / "constraints.py"), run_name="__main__")
    return out.getvalue()


def drift(pinned: dict[str, str], installed: dict[str, str]) -> list[str]:
    """One line per pin added, removed or changed between the file and the installed closure,
    by name."""
    lines = [f"+ {n}=={v} (installed, not pinned)" for n, v in installed.items() if n not in pinned]
    lines += [
        f"- {n}=={v} (pinned, not in the closure)" for n, v in pinned.items() if n not in installed
    ]
    lines += [
        f"~ {n}: pinned {v}, installed {installed[n]}"
        for n, v in pinned.items()
        if n in installed and installed[n] != v
    ]
    return sorted(lines, key=lambda line: line[2:])


def test_every_runtime_dependency_is_pinned_within_its_bounds() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lite = tomllib.loads((REPO / "hypatia-lite/pyproject.toml").read_text(encoding="utf-8"))
    declared = [
        Requirement(line)
        for line in project["dependencies"]
        + project["optional-dependencies"]["distributed"]
        + lite["project"]["dependencies"]
        if not line.startswith("hypatia-lite")
    ]
    pins = _pins()
    assert {"typer", "openai", "celery", "psycopg", "filelock", "sqlean-py"} <= {
        r.name for r in declared
    }
    for requirement in declared:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{requirement.name}=={pins[name]} is outside {requirement.specifier}"
        )


def test_the_installed_runtime_closure_is_pinned_and_no_dev_tool() -> None:
    closure = runpy.run_path(str(REPO / "deploy" / "constraints.py"))["runtime_closure"]()
    pins = _pins()
    assert {canonicalize_name(name) for name in closure} <= set(pins)
    assert {"celery", "psycopg", "openai", "sqlalchemy", "redis"} <= set(pins)
    assert not {"pytest", "mypy", "ruff", "hypothesis", "dsh-memory-worker"} & set(pins)
    assert "hypatia-lite" not in pins and "hypatia-lite" not in closure


def test_the_file_is_what_the_script_prints_in_this_venv() -> None:
    regenerated = _regenerated()
    problems = drift(_pins(), _parse(regenerated))
    assert problems == [], (
        "constraints.txt differs from the runtime closure installed in this venv:\n  "
        + "\n  ".join(problems)
        + "\nA venv installed with `-c constraints.txt` (the README's test command) has the pinned"
        " versions; after changing a dependency or upgrading on purpose, write the file again:"
        f"\n  {FIX}"
    )
    assert (REPO / "constraints.txt").read_text(encoding="utf-8") == regenerated, (
        f"constraints.txt is not as deploy/constraints.py writes it; run\n  {FIX}"
    )


def test_drift_names_every_added_removed_and_changed_pin() -> None:
    pinned = {"openai": "3.57.0", "redis": "8.1.0", "gone": "1.0", "same": "2.0"}
    installed = {"openai": "3.58.0", "redis": "8.1.0", "new": "0.1", "same": "2.0"}
    assert drift(pinned, installed) == [
        "- gone==1.0 (pinned, not in the closure)",
        "+ new==0.1 (installed, not pinned)",
        "~ openai: pinned 3.57.0, installed 3.58.0",
    ]


def test_metadata_left_in_a_source_tree_counts_as_from_a_directory(tmp_path: Path) -> None:
    """An editable build leaves ``<name>.egg-info`` in the source tree; when that tree is on
    ``sys.path`` (pytest puts a test package's parent there) its metadata is found before the
    installed one and has no ``direct_url.json``: it still comes from a directory. What pip
    installed from the index into site-packages does not."""
    script = runpy.run_path(str(REPO / "deploy" / "constraints.py"))
    egg = tmp_path / "hypatia_lite.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: hypatia-lite\nVersion: 0.1.0\n")
    assert script["installed_from_directory"](PathDistribution(egg)) is True
    assert script["installed_from_directory"](distribution("packaging")) is False
