from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The kits the tests share (``pipeline_support``, ``eventkit``, ``model_server``,
#: ``store_contract`` …) import by their own names from every subsystem's folder.
SUPPORT = REPO / "tests" / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
FIXTURES = REPO / "tests" / "fixtures" / "dsh"
# `run --once --jobs N` would use fewer processes whenever the suite keeps the cores busy; the
# tests of N processes (kills of a child, identical dumps) need exactly N. The adaptation itself
# is tested with the setting on, in tests/run/test_run_jobs_adapt.py.
os.environ.setdefault("MEMORY_WORKER_JOBS_ADAPT", "false")


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
