"""``worker.state`` exports its names lazily (:data:`worker.state._HOMES`): each one is the object
of the module it names, and importing the package alone loads no SQLAlchemy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import dsh_memory_worker.worker.state as state


def test_every_exported_name_is_its_modules_object() -> None:
    assert sorted(state.__all__) == sorted(state._HOMES)
    for name, home in state._HOMES.items():
        assert getattr(state, name) is getattr(importlib.import_module(home), name)


@pytest.mark.integration  # a fresh interpreter
def test_the_package_and_its_sql_free_modules_import_without_sqlalchemy() -> None:
    probe = (
        "import sys, dsh_memory_worker.worker.state, dsh_memory_worker.worker.state.template, "
        "dsh_memory_worker.worker.state.revision_files\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlalchemy'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
