from __future__ import annotations

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


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
