"""Print the constraints the Docker image installs from: the exact version of every distribution
in the runtime closure of ``dsh-memory-worker[distributed]`` (its dependencies, theirs, …), as
installed in the environment that runs this script — the dev venv the tests passed in. Dev tools
(pytest, mypy, ruff …) are not in the closure, so they are not pinned.

``hypatia-lite`` is in the closure but not pinned: it is built from this repository
(``hypatia-lite/``) next to the worker, so its version is the checkout's, and the image installs
its wheel from the checkout (``--no-deps``), never from an index. Its own requirements are pinned.

Regenerate after changing a dependency in ``pyproject.toml`` (or upgrading the venv)::

    .venv/bin/python deploy/constraints.py > constraints.txt

``tests/project/test_constraints.py`` fails while a runtime dependency is not pinned here.
"""

from __future__ import annotations

from importlib.metadata import distribution

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = "dsh-memory-worker"
EXTRAS = frozenset({"distributed"})
#: The distributions built from this repository: walked, not pinned.
LOCAL = frozenset({"hypatia-lite"})


def runtime_closure(root: str = ROOT, extras: frozenset[str] = EXTRAS) -> dict[str, str]:
    """Installed name → version of every distribution ``root[extras]`` needs here."""
    pins: dict[str, str] = {}
    seen: dict[str, frozenset[str]] = {}
    todo = [(root, extras)]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, frozenset()) | wanted
        dist = distribution(name)
        if key != canonicalize_name(root) and key not in LOCAL:
            pins[dist.metadata["Name"]] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in (*wanted, "")):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return pins


def main() -> None:
    print("# The runtime closure of dsh-memory-worker[distributed], pinned: the Docker image")
    print("# installs from it. Regenerate it from the dev venv, where the tests passed:")
    print("#   .venv/bin/python deploy/constraints.py > constraints.txt")
    for name, version in sorted(runtime_closure().items(), key=lambda kv: kv[0].lower()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main()
