"""The import graph of the project's packages (``hypatia_lite``, ``dsh_memory_worker.memory``,
``dsh_memory_worker.worker``; the folders hypatia-lite/hypatia_lite, memory/, worker/) runs one
way down, counting every import: module level, function-local and ``TYPE_CHECKING`` blocks alike
(the AST is walked, nothing is imported).

* no import cycle anywhere;
* ``hypatia_lite`` (the store) imports nothing of ``memory`` or ``worker``; ``memory`` (the
  domain) imports nothing of ``worker``;
* inside ``worker``, no arrow runs from a lower floor to a higher one (:data:`WORKER_FLOORS`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
#: Each package's import name → its folder in the checkout.
PACKAGES = {
    "hypatia_lite": ROOT / "hypatia-lite" / "hypatia_lite",
    "dsh_memory_worker": ROOT / "dsh_memory_worker",
    "dsh_memory_worker.memory": ROOT / "memory",
    "dsh_memory_worker.worker": ROOT / "worker",
}
#: The namespace root's ``__init__``: it holds the version, which any module may read.
VERSION_HOME = "dsh_memory_worker"
#: What each package may import of the others.
MAY_IMPORT = {
    "hypatia_lite": set(),
    # the namespace root (its version, `python -m`, `celery -A`) stands above the worker
    "dsh_memory_worker": {"dsh_memory_worker.worker"},
    "dsh_memory_worker.memory": {"hypatia_lite"},
    "dsh_memory_worker.worker": {"hypatia_lite", "dsh_memory_worker.memory"},
}
#: ``worker``'s floors, top first: a module imports its own floor or the ones below, never above.
WORKER_FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "dsh_memory_worker.worker.cli",
        "dsh_memory_worker.worker.__main__",
        "dsh_memory_worker.worker.commands",
        "dsh_memory_worker.worker.console",
        "dsh_memory_worker.worker.tasks",
        "dsh_memory_worker.worker.service",
        "dsh_memory_worker.worker.at_rest",
    ),
    ("dsh_memory_worker.worker.run",),
    ("dsh_memory_worker.worker.watch", "dsh_memory_worker.worker.verify"),
    ("dsh_memory_worker.worker.jobs",),
    (
        "dsh_memory_worker.worker.observability",
        "dsh_memory_worker.worker.shipping",
        "dsh_memory_worker.worker.figures",
        "dsh_memory_worker.worker.consolidation_state",
    ),
    ("dsh_memory_worker.worker.state",),
    (
        "dsh_memory_worker.worker.settings",
        "dsh_memory_worker.worker.data_dir",
        "dsh_memory_worker.worker.logs",
        "dsh_memory_worker.worker.names",
        "dsh_memory_worker.worker.demo",
        "dsh_memory_worker.worker.store_config",
        "dsh_memory_worker.worker.stop_flag",
    ),
)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        paths = folder.glob("*.py") if package == "dsh_memory_worker" else folder.rglob("*.py")
        for path in sorted(paths):
            parts = [*package.split("."), *path.relative_to(folder).with_suffix("").parts]
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _package(module: str) -> str:
    """The package of :data:`PACKAGES` that ``module`` belongs to (the longest that fits)."""
    return max(
        (p for p in PACKAGES if module == p or module.startswith(p + ".")), key=len, default=""
    )


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` refers to (a module, or the package a name is taken from)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports, anywhere in its body."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, path, node)
                targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            for target in targets:
                owner = _owner(target, modules)
                if owner is not None and owner != module:
                    graph[module].add(owner)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of modules, or None (iterative DFS, three colours)."""
    colour: dict[str, int] = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if colour[start]:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        colour[start] = 1
        while stack:
            node, pending = stack[-1]
            if not pending:
                colour[node] = 2
                stack.pop()
                continue
            nxt = pending.pop()
            if colour[nxt] == 1:
                trail = [name for name, _ in stack]
                return [*trail[trail.index(nxt) :], nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, sorted(graph[nxt])))
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The import graph, walked once for the module's checks (none of them changes it)."""
    return import_graph()


def test_the_import_graph_is_walked(graph: dict[str, set[str]]) -> None:
    assert (
        "dsh_memory_worker.worker.cli" in graph
        and "dsh_memory_worker.memory.span" in graph
        and "hypatia_lite.store" in graph
    )
    assert any(graph.values())


def _floor(module: str) -> int | None:
    for level, rooms in enumerate(WORKER_FLOORS):
        if any(module == room or module.startswith(room + ".") for room in rooms):
            return level
    return None


def test_packages_import_one_way_down(graph: dict[str, set[str]]) -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if (pkg := _package(target)) != (own := _package(module))
        and pkg not in MAY_IMPORT[own]
        and target != VERSION_HOME
    )
    assert not wrong, "imports against the packages' order:\n" + "\n".join(wrong)


def test_the_version_home_imports_nothing(graph: dict[str, set[str]]) -> None:
    """Every package may read the version from the namespace root because the root's
    ``__init__`` imports nothing of the project (importing the domain loads no worker code)."""
    assert graph[VERSION_HOME] == set()


def test_every_worker_module_has_a_floor(graph: dict[str, set[str]]) -> None:
    homeless = sorted(
        m for m in graph if m.startswith("dsh_memory_worker.worker.") and _floor(m) is None
    )
    assert not homeless, f"give these a floor in WORKER_FLOORS: {homeless}"


def test_no_arrow_runs_back_up_inside_worker(graph: dict[str, set[str]]) -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if (low := _floor(module)) is not None
        and (high := _floor(target)) is not None
        and high < low
    )
    assert not upward, "imports from a lower floor of worker to a higher one:\n" + "\n".join(upward)


def test_no_import_cycle(graph: dict[str, set[str]]) -> None:
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
