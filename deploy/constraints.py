"""Print the constraints the Docker image installs from: the exact version of every distribution
in the runtime closure of ``dsh-memory-worker[distributed]`` (its dependencies, theirs, …), as
installed in the environment that runs this script — the dev venv the tests passed in. Dev tools
(pytest, mypy, ruff …) are not in the closure, so they are not pinned.

A distribution installed from a directory (this repository's own projects — ``hypatia-lite``,
built from ``hypatia-lite/`` — editable or not) is not pinned: it does not come from the index.
Its requirements are walked all the same.

The README's test command (which CI runs) installs with ``-c constraints.txt``, so the venv the
tests pass in has exactly these versions. Regenerate after changing a dependency in
``pyproject.toml`` (or upgrading the venv on purpose)::

    .venv/bin/python deploy/constraints.py > constraints.txt

``tests/project/test_constraints.py`` fails while a runtime dependency is not pinned here, and
while this script's output differs from the file (a pin added, removed or changed).
"""

from __future__ import annotations

import json
import sysconfig
from importlib.metadata import Distribution, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = "dsh-memory-worker"
EXTRAS = frozenset({"distributed"})


def installed_from_directory(dist: Distribution) -> bool:
    """Whether ``dist`` comes from a local directory: pip recorded ``dir_info`` (PEP 610), or its
    metadata was found outside the interpreter's site-packages (an ``.egg-info`` an editable
    build left in the source tree, which comes first when that tree is on ``sys.path``)."""
    recorded = dist.read_text("direct_url.json")
    if recorded is not None:
        return "dir_info" in json.loads(recorded)
    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return Path(str(dist.locate_file(""))).resolve() not in site


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
        if key != canonicalize_name(root) and not installed_from_directory(dist):
            pins[dist.metadata["Name"]] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in (*wanted, "")):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return pins


def main() -> None:
    print("# The runtime closure of dsh-memory-worker[distributed], pinned: the Docker image and")
    print("# the README's test command (which CI runs) install with `-c constraints.txt`, so the")
    print("# tests run on the versions the image ships. Regenerate it from the dev venv:")
    print("#   .venv/bin/python deploy/constraints.py > constraints.txt")
    for name, version in sorted(runtime_closure().items(), key=lambda kv: kv[0].lower()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main()
