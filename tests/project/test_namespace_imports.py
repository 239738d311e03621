"""Every import of the project's own packages names them as installed: ``dsh_memory_worker.worker``,
``dsh_memory_worker.memory``, ``dsh_memory_worker.migrations``. The top-level names the folders
have in the checkout (``worker``, ``memory``) would import a second copy of each module when the
checkout is on the path, and nothing at all from a wheel: the import statements of every Python
file and the code the tests and benchmarks hand to a fresh interpreter (string constants) are
checked."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

OLD = {"worker", "memory", "dsh_memory_worker_migrations"}
#: An import statement inside a string (``python -c`` probes, generated scripts).
IN_STRING = re.compile(r"(?:^|[\n;]|\bexec\()\s*(?:from|import)\s+(worker|memory)\b(?![-\w])")
SKIP = {".venv", ".git", ".mypy_cache", "fixtures", "node_modules", "build"}
#: Files that import the old names on purpose: the wheel test's probe of another distribution
#: that owns them, and this file's own sample.
ON_PURPOSE = {"tests/project/test_install_from_wheel.py", "tests/project/test_namespace_imports.py"}


def _python_files() -> list[Path]:
    return [
        path
        for path in sorted(REPO.rglob("*.py"))
        if not SKIP & set(path.relative_to(REPO).parts)
        and str(path.relative_to(REPO)) not in ON_PURPOSE
    ]


def old_imports(path: Path) -> list[str]:
    """``file:line  statement`` for each import of an old top-level name in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [m.group(1) for m in IN_STRING.finditer(node.value)]
        if any(name.partition(".")[0] in OLD for name in names):
            found.append(f"{path.name}:{node.lineno}  {', '.join(names)}")
    return found


def test_the_checker_sees_old_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import memory.store\nfrom worker.cli import main\n"
        "PROBE = 'import sys; from worker.state import StateDB'\n"
        "from dsh_memory_worker.worker import cli\nNOTE = 'the worker import runs'\n"
    )
    found = [line.split("  ", 1)[1] for line in old_imports(sample)]
    assert found == ["memory.store", "worker.cli", "worker"]


def test_no_file_imports_an_old_top_level_name() -> None:
    found = [line for path in _python_files() for line in old_imports(path)]
    assert not found, "import these as dsh_memory_worker.<name>:\n" + "\n".join(found)
