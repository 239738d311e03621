"""Read-only commands create nothing on a fresh home — no state database, no shelf, no directory
— say "nothing recorded yet" and exit 0; ``status`` still lists the sessions on disk it has not
recorded. ``status`` says "consolidation off" (no model route, or ``consolidation_enabled`` false)
instead of a consolidation lag that cannot drain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import demo_recorded, memory_worker, tree

pytestmark = pytest.mark.integration

ROUTE = '[{"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"}]'


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["status", "--json"],
        ["status", "--audit"],
        ["config"],
        ["config", "--json"],
        ["verify-forgetting"],
        ["verify-forgetting", "--json"],
        ["segments", "prune", "--dry-run"],
        ["inspect", "DSH"],
    ],
)
def test_a_read_only_command_creates_nothing_on_a_fresh_home(
    tmp_path: Path, argv: list[str]
) -> None:
    (tmp_path / "home").mkdir()
    made = memory_worker(tmp_path, "demo-home", str(tmp_path / "dsh"))
    assert made.returncode == 0, made.stderr
    before = tree(tmp_path)
    argv = [str(tmp_path / "dsh") if word == "DSH" else word for word in argv]
    done = memory_worker(tmp_path, *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(tmp_path) == before
    if argv[0] in ("status", "verify-forgetting", "segments"):
        said = [line for line in done.stderr.splitlines() if "nothing recorded yet" in line]
        assert len(said) == 1, done.stderr
    if argv == ["status", "--json"]:
        found = json.loads(done.stdout)
        assert len(found["sessions"]) == found["total"]["not_recorded"] > 0
        assert not any(row["recorded"] for row in found["sessions"])
    if argv == ["verify-forgetting", "--json"]:
        assert json.loads(done.stdout)["leaks"] == []


def test_status_says_consolidation_off_instead_of_an_undrainable_lag(tmp_path: Path) -> None:
    demo_recorded(tmp_path)
    off = memory_worker(tmp_path, "status", "--wide")
    assert off.returncode == 0, off.stderr
    assert "consolidation off" in off.stdout + off.stderr
    rows = [line for line in off.stdout.splitlines() if line.startswith("│ ")]
    assert rows and all("│ off " in line for line in rows), off.stdout
    found = json.loads(memory_worker(tmp_path, "status", "--json").stdout)
    assert found["consolidation"] == "off"
    disabled = memory_worker(
        tmp_path,
        "status",
        "--json",
        MEMORY_WORKER_MODEL_ROUTES=ROUTE,
        MEMORY_WORKER_CONSOLIDATION_ENABLED="false",
    )
    assert json.loads(disabled.stdout)["consolidation"] == "off"
    on = memory_worker(tmp_path, "status", "--wide", MEMORY_WORKER_MODEL_ROUTES=ROUTE)
    assert "consolidation off" not in on.stdout + on.stderr
    assert (
        json.loads(
            memory_worker(tmp_path, "status", "--json", MEMORY_WORKER_MODEL_ROUTES=ROUTE).stdout
        )["consolidation"]
        == "on"
    )
    assert found["total"]["consolidation_lag"] > 0  # the lag itself is still in the JSON
