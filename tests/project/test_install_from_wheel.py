"""The wheels installed outside the checkout run: the two wheels are built from this tree
(hypatia-lite's from ``hypatia-lite/``, the worker's), installed, the worker's with its
``distributed`` extra, by pip into a fresh virtual environment in a temporary directory (pip
resolves its requirements over a seed of the distributions this environment has installed for
them, and installs what the seed lacks from the local pip cache / index), and from there, with
the checkout nowhere on the path:

* the README's main command — ``demo-home`` then ``run --once`` — writes the same 28 entries and
  19 edges as the same command from the checkout;
* ``memory-worker migrate upgrade`` migrates a throwaway PostgreSQL database to the packaged head;
* ``hypatia-lite --version`` and ``memory-worker --version`` answer;
* each installed distribution carries the LICENSE, and the top-level ``migrations/`` (installed as
  ``dsh_memory_worker.migrations``) is the script directory it migrates with;
* the wheel installs one import name, ``dsh_memory_worker``, and works beside another
  distribution (installed in the same venv) that owns the top-level ``worker`` and ``memory``
  modules, which keep working too;
* without the packaged revisions, ``run --once`` is one line and exit status 2.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_fork import run_cli
from cluster_support import lite_names
from conftest import REPO
from state_db_support import throwaway_pg_database
from venv_snapshot import run_wheels, snapshot_venv

from dsh_memory_worker import __version__
from dsh_memory_worker.worker.state.migrate import head_revision
from hypatia_lite import db, shelves

# Building and installing the wheel (in the module fixture) counts towards the first test.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv (outside the checkout) with the wheel built from this tree installed by pip
    with its ``distributed`` extra. pip resolves the wheel's requirements over a seed of this
    environment's installed distributions (tests/support/venv_snapshot.py: the ones those
    requirements reach, hard-linked), so it downloads and compiles nothing it has here; what the
    seed lacks or does not satisfy, pip installs. (.ci/base_install_check.sh installs the wheel
    with no extra and no seed, resolving from the index.)"""
    root = tmp_path_factory.mktemp("wheel")
    wheels = run_wheels(tmp_path_factory, REPO)  # built once a run (the e2e tests use them too)
    venv = root / "venv"
    # This environment's pip installs into the new one (no pip bootstrap); it compiles nothing.
    bindir = snapshot_venv(sys.executable, venv, wheels, frozenset({"distributed"}), "--no-compile")
    assert bindir == venv / "bin"
    install_collider(root / "collider", venv)
    yield venv


#: A distribution of someone else's that owns the top-level names the worker's packages had
#: before they moved under ``dsh_memory_worker``.
COLLIDER = {
    "worker/__init__.py": 'OWNER = "collider"\n',
    "memory/__init__.py": 'OWNER = "collider"\n',
    "memory/store.py": "def base() -> str:\n    return 'collider store'\n",
}


def install_collider(where: Path, venv: Path) -> None:
    """Write the collider's wheel (a zip with its dist-info: no build tool) and install it."""
    where.mkdir(parents=True)
    wheel = where / "collider-1.0-py3-none-any.whl"
    info = "collider-1.0.dist-info"
    files = {
        **COLLIDER,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: collider\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": "memory\nworker\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(
            f"{info}/RECORD", "".join(f"{n},," + "\n" for n in [*files, f"{info}/RECORD"])
        )
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def _env(tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_WORKER_", "PYTHON", "HYPATIA_LITE", "DSH_"))
    }
    env.update(
        HYPATIA_LITE_HOME=str(tmp / "lite"),
        MEMORY_WORKER_DATA_DIR=str(tmp / "data"),
        MEMORY_WORKER_CONFIG="",
        HOME=str(tmp),
    )
    return env


def _run(
    binary: Path, args: list[str], tmp: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args],
        cwd=tmp,
        env={**_env(tmp), **extra},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _main_command(bindir: Path | None, tmp: Path) -> tuple[set[str], int, str]:
    """The README's main command in ``tmp``: the wheel's ``memory-worker`` in ``bindir``, or
    (``None``) the checkout's, forked from the pre-imported parent of ``run_cli``."""
    tmp.mkdir(parents=True, exist_ok=True)

    def mw(args: list[str]) -> subprocess.CompletedProcess[str]:
        if bindir is None:
            return run_cli(args, env=_env(tmp), cwd=tmp, timeout=300)
        return _run(bindir / "memory-worker", args, tmp)

    demo = mw(["demo-home", str(tmp / "dsh")])
    assert demo.returncode == 0, demo.stderr
    once = mw(["run", "--once", "--dsh-home", str(tmp / "dsh")])
    assert once.returncode == 0, once.stderr
    path = shelves.resolve(shelves.lite_home(tmp / "lite"), "default") / db.DB_FILE
    with sqlite3.connect(path) as conn:
        edges = int(
            conn.execute("SELECT count(*) FROM statement WHERE relation = 'belongTo'").fetchone()[0]
        )
    return lite_names(tmp / "lite"), edges, once.stderr


def test_the_wheel_runs_the_readme_command_migrates_and_reports_versions(
    wheel_venv: Path, tmp_path: Path
) -> None:
    bindir = wheel_venv / "bin"
    where = subprocess.run(
        [
            str(bindir / "python"),
            "-c",
            "import hypatia_lite\n"
            "from dsh_memory_worker import worker, memory\n"
            "from dsh_memory_worker.worker.state.revision_files import find_migrations_dir\n"
            "print(worker.__file__, memory.__file__, hypatia_lite.__file__)\n"
            "print(find_migrations_dir())",
        ],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    modules, found = where[0].split(), where[1].strip()
    assert all(Path(p).is_relative_to(wheel_venv) for p in modules), where
    site = next((wheel_venv / "lib").glob("python3*/site-packages"))
    (license_file,) = site.glob("dsh_memory_worker-*.dist-info/licenses/LICENSE")
    assert license_file.read_bytes() == (REPO / "LICENSE").read_bytes()
    (license_file,) = site.glob("hypatia_lite-*.dist-info/licenses/LICENSE")
    assert license_file.read_bytes() == (REPO / "hypatia-lite" / "LICENSE").read_bytes()
    assert Path(found) == site / "dsh_memory_worker" / "migrations"
    assert sorted(p.name for p in Path(found, "versions").glob("*.py")) == sorted(
        p.name for p in (REPO / "migrations" / "versions").glob("*.py")
    )

    names, edges, summary = _main_command(bindir, tmp_path / "wheel")
    checkout_names, checkout_edges, _ = _main_command(None, tmp_path / "checkout")
    assert (len(names), edges) == (28, 19)
    assert (names, edges) == (checkout_names, checkout_edges)
    assert "28 entries written, 0 retracted, 19 edges" in summary

    assert _run(bindir / "hypatia-lite", ["--version"], tmp_path).stdout.startswith("hypatia-lite ")
    assert _run(bindir / "memory-worker", ["--version"], tmp_path).stdout == (
        f"memory-worker {__version__}\n"
    )
    with throwaway_pg_database() as url:
        migrated = _run(
            bindir / "memory-worker", ["migrate", "upgrade"], tmp_path, MEMORY_WORKER_STATE_URL=url
        )
        assert migrated.returncode == 0, migrated.stderr
        assert migrated.stdout.strip() == f"{url}: now at {head_revision()}"


def test_missing_revisions_are_one_line_and_exit_2(wheel_venv: Path, tmp_path: Path) -> None:
    site = next((wheel_venv / "lib").glob("python3*/site-packages"))
    versions = site / "dsh_memory_worker" / "migrations" / "versions"
    kept = tmp_path / "kept"
    shutil.copytree(versions, kept)
    try:
        for revision in versions.glob("*.py"):
            revision.unlink()
        result = _run(
            wheel_venv / "bin" / "memory-worker",
            ["run", "--once", "--dsh-home", str(tmp_path / "dsh")],
            tmp_path,
        )
    finally:
        shutil.copytree(kept, versions, dirs_exist_ok=True)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        f"memory-worker: {versions} holds no Alembic revision; reinstall "
        "dsh-memory-worker or fix migrations_dir"
    ], result.stderr


def test_one_import_name_beside_a_collider(wheel_venv: Path, tmp_path: Path) -> None:
    """The wheel's own files all sit under ``dsh_memory_worker/`` (and its dist-info); the
    collider's ``worker`` and ``memory`` stay the collider's, and the worker's commands, its
    ``python -m`` and the Celery app path work beside them."""
    site = next((wheel_venv / "lib").glob("python3*/site-packages"))
    (record,) = site.glob("dsh_memory_worker-*.dist-info/RECORD")
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text().splitlines()}
    assert {t for t in tops if not t.endswith(".dist-info")} - {"..", "bin"} == {
        "dsh_memory_worker"
    }, tops
    python = str(wheel_venv / "bin" / "python")
    probe = subprocess.run(
        [
            python,
            "-c",
            "import worker, memory, memory.store\n"
            "from celery.app.utils import find_app\n"
            "import dsh_memory_worker.memory.store.base as base\n"
            "print(worker.OWNER, memory.OWNER, memory.store.base())\n"
            "print(find_app('dsh_memory_worker').main, base.__name__)",
        ],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [
        "collider collider collider store",
        "memory_worker dsh_memory_worker.memory.store.base",
    ]
    version = _run(Path(python), ["-m", "dsh_memory_worker", "--version"], tmp_path)
    assert (version.returncode, version.stdout) == (0, f"memory-worker {__version__}\n")
    celery = _run(Path(python), ["-m", "celery", "-A", "dsh_memory_worker", "report"], tmp_path)
    assert celery.returncode == 0, celery.stderr
    assert "task_send_sent_event: True" in celery.stdout  # the worker's app, configured
