from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "dsh"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
