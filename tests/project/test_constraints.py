"""``constraints.txt`` (what the Docker image installs from) pins every runtime dependency that
``pyproject.toml`` declares — the base set and the ``distributed`` extra — and every one
``hypatia-lite/pyproject.toml`` declares to one version inside the declared bounds, and every
distribution of the runtime closure installed here (``deploy/constraints.py`` lists it); it pins
no dev tool, and not hypatia-lite (built from this repository)."""

from __future__ import annotations

import runpy
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, equals, version = line.partition("==")
            assert equals and version.strip(), f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


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
