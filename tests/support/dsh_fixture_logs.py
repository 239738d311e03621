"""Every DSH log the repository ships as a fixture: the copies of shared/fixtures/dsh (DSH's own
examples) and dsh-0.2 (logs DSH 0.2.1-rc.2 wrote), and the demo home packaged with the worker."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (
    REPO / "tests" / "fixtures" / "dsh",
    REPO / "tests" / "fixtures" / "dsh-0.2",
    REPO / "worker" / "demo" / "dsh",
)


def fixture_logs() -> list[Path]:
    """Every ``session*.jsonl*`` below the fixture roots; a root holding none fails the caller."""
    logs = {root: sorted(root.rglob("session*.jsonl*")) for root in ROOTS}
    assert all(logs.values()), f"a fixture root holds no log: {logs}"
    return sorted(p for found in logs.values() for p in found)
