"""A venv of another Python (the system's) with this tree installed, built in seconds.

:func:`snapshot_venv` makes ``python -m venv --without-pip`` of that Python and installs this
tree into it (the wheels built by pip, hypatia-lite's and the worker's, installed by one pip
command with the extras asked for, not editable: the checkout need not be readable by whoever
runs the venv), as a user would — but first it seeds the
venv's site-packages with the distributions this environment already has installed for those
requirements, hard-linked (copied across file systems) file by file from their ``RECORD``. pip
then resolves the project's requirements on that Python as usual: what the seed satisfies stays,
what it lacks (a requirement whose marker holds only there) is installed. The editable installs
of the checkout (their ``__editable__`` .pth and finder) are never linked: the wheels' projects
are left out of the seed.

It declines (returns ``None``; build the venv in full then) when that Python's version or ABI
differs from this one's: the compiled wheels installed here would not load there.

:func:`run_wheels` builds the tree's two wheels once per test run, for every module that
installs them.
"""

from __future__ import annotations

import fcntl
import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
_ABI = "import sys, sysconfig; print(sys.version_info[:2], sysconfig.get_config_var('SOABI'))"


def same_abi(python: str) -> bool:
    """Whether ``python`` runs this interpreter's version and ABI (its wheels load there)."""
    done = subprocess.run([python, "-c", _ABI], capture_output=True, text=True, timeout=60)
    ours = f"{sys.version_info[:2]} {sysconfig.get_config_var('SOABI')}"
    return done.returncode == 0 and done.stdout.strip() == ours


def installed_closure(project: str, extras: frozenset[str]) -> list[md.Distribution]:
    """The distributions installed here that ``project[extras]``'s requirements reach (with this
    interpreter's markers), ``project`` excluded; one missing here, or at a version the
    requirement excludes, is left out (pip installs it); none when ``project`` itself is not
    installed here."""
    try:
        md.distribution(project)
    except md.PackageNotFoundError:
        return []
    found: dict[str, md.Distribution] = {}
    asked: dict[str, frozenset[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(project, extras)]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in asked and wanted <= asked[key]:
            continue
        dist = found.get(key) or md.distribution(name)
        found[key], asked[key] = dist, asked.get(key, frozenset()) | wanted
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in {"", *wanted}):
                continue
            try:
                version = md.version(req.name)
            except md.PackageNotFoundError:
                continue
            if req.specifier.contains(version, prereleases=True):
                todo.append((req.name, frozenset(req.extras)))
    del found[canonicalize_name(project)]
    return list(found.values())


def _link_tree(dist: md.Distribution, site: Path) -> None:
    """Hard-link (or copy) ``dist``'s files under its site-packages into ``site``."""
    origin = Path(str(dist.locate_file(""))).resolve()
    for entry in dist.files or []:
        source = Path(os.path.normpath(dist.locate_file(entry)))
        if not source.is_relative_to(origin) or not source.is_file():
            continue  # a console script in bin/, or a .pyc that was never written
        target = site / source.relative_to(origin)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)


#: What a checkout holds besides its sources: left out of the copy a wheel is built from.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "node_modules",
)


def build_wheel(source: Path, dest: Path) -> Path:
    """The wheel pip builds (``pip wheel --no-deps``, build isolation) in ``dest`` from a copy of
    ``source`` without its build products: setuptools packs whatever a checkout's ``build/lib``
    still holds from an earlier build (packages since renamed, say), which no user's clean
    checkout has."""
    copy = dest.parent / f"source-of-{dest.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy, ignore=_NOT_SOURCES, symlinks=True)
    subprocess.run(
        [*_PIP, "wheel", "--no-deps", "-w", str(dest), str(copy)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dest.glob("*.whl")
    return wheel


def run_wheels(factory: pytest.TempPathFactory, repo: Path) -> tuple[Path, Path]:
    """The wheels of ``repo``: hypatia-lite's (from ``repo/hypatia-lite``) and the worker's,
    each :func:`build_wheel` once per test run: built under a lock in the temporary directory
    the run's processes share (pytest-xdist's workers' common parent), which every later caller
    of the run reuses."""
    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    wheels = []
    for source, name in ((repo / "hypatia-lite", "hypatia-lite"), (repo, "the-tree")):
        cache = shared / f"wheel-of-{name}"
        cache.mkdir(exist_ok=True)
        with (cache / "lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            built = sorted((cache / "dist").glob("*.whl"))
            wheels.append(built[0] if built else build_wheel(source, cache / "dist"))
    return wheels[0], wheels[1]


def bare_venv(python: str, venv: Path) -> None:
    """``python -m venv --without-pip VENV``: pip is this environment's, run with ``--python``."""
    subprocess.run(
        [python, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=300,
    )


def snapshot_venv(
    python: str, venv: Path, wheels: Sequence[Path], extras: frozenset[str], *options: str
) -> Path | None:
    """A venv of ``python`` at ``venv`` with ``wheels`` installed by one pip command, the last
    with ``extras`` (and pip ``options``), seeded from this environment; its bin directory, or
    ``None`` (nothing made) when that Python's version or ABI is not this one's."""
    if not same_abi(python):
        return None
    bare_venv(python, venv)
    (site,) = venv.glob("lib/python3*/site-packages")
    *others, wheel = wheels
    ours = {canonicalize_name(w.name.split("-")[0]) for w in wheels}
    for dist in installed_closure(wheel.name.split("-")[0], extras):
        if canonicalize_name(dist.metadata["Name"]) not in ours:
            _link_tree(dist, site)
    requirement = f"{wheel}[{','.join(sorted(extras))}]" if extras else str(wheel)
    done = subprocess.run(
        [
            *_PIP,
            "--python",
            str(venv / "bin" / "python"),
            "install",
            *options,
            *map(str, others),
            requirement,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin"
