"""``run --once`` against a store that alternately hangs and answers is bounded like a hanging one
(issue 32, defect 6 / build item 7).

The breaker (``memory.store.breaker``) counts the store's timeouts in a sliding window of
``store_down_window_s`` (300 s): the ``store_down_after_timeouts``-th (3rd) timeout within it
opens the breaker, whatever answers came between them. Before, only timeouts *in a row* counted,
so a store whose every other call hung never opened it and each session waited on many timeouts.
Real flapping stores: a ``cli`` binary whose writes alternately hang and pass to hypatia-lite, and
an MCP server (the fake ``hypatia`` proxy) whose tool calls alternately hang and answer. The run
waits on at most 3 hung calls, names every session it could not finish and exits 1; a later run
with a healthy store converges on the clean run's store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fault_support import LITE, dump, lay_home, not_finished, run_once, wait_for
from store_contract.fake_binary import alive, read_pids, write_fake_hypatia

pytestmark = pytest.mark.integration

SESSIONS = [(f"fl-{i}", f"/home/dev/flap-{i % 2}", 3) for i in range(3)]
TIMEOUT_S = 0.5
#: 3 timeouts of 0.5 s, and start-up, scan and the healthy calls of a busy 2-core machine.
BOUND_S = 3 * TIMEOUT_S + 25.0

#: Every odd write hangs (and says so in $FLAP_HANGS), every even one is hypatia-lite's; the
#: feature probes (``knowledge-create --help``) pass.
CLI_WRAPPER = """#!/bin/sh
case "$1 $2" in
  *--help*) ;;
  knowledge-create*|statement-create*)
    n=$(cat "$FLAP_COUNT" 2>/dev/null || echo 0)
    n=$((n + 1))
    echo "$n" > "$FLAP_COUNT"
    if [ $((n % 2)) -eq 1 ]; then
      echo "$n" >> "$FLAP_HANGS"
      sleep 300
    fi ;;
esac
exec "$FLAP_LITE" "$@"
"""


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean")
    lay_home(root, sessions=SESSIONS)
    done = run_once(root)
    assert done.returncode == 0, done.stderr
    return root


def _hangs(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _bounded_run(root: Path, hangs: Path, **extra: str) -> None:
    started = time.monotonic()
    flapped = run_once(root, MEMORY_WORKER_STORE_TIMEOUT_S=str(TIMEOUT_S), **extra)
    elapsed = time.monotonic() - started
    assert flapped.returncode == 1, flapped.stderr
    assert elapsed < BOUND_S, f"run --once took {elapsed:.1f} s: {flapped.stderr}"
    assert not_finished(flapped.stderr) == {sid for sid, _, _ in SESSIONS}
    assert "treated as down after 3 timeouts within 300 s" in flapped.stderr
    # At most 3 calls hung (fewer when a healthy call missed the short timeout on a busy machine:
    # it counts as one of the 3); answers came between them, so the breaker saw a flapping store.
    assert 1 <= len(_hangs(hangs)) <= 3, _hangs(hangs)


def _converges(root: Path, clean: Path, **extra: str) -> None:
    healthy = run_once(root, **extra)
    assert healthy.returncode == 0, healthy.stderr
    assert dump(root) == dump(clean)


def test_run_once_on_a_flapping_cli_store_is_bounded(tmp_path: Path, clean: Path) -> None:
    lay_home(tmp_path, like=clean)
    wrapper = tmp_path / "flap-hypatia"
    wrapper.write_text(CLI_WRAPPER)
    wrapper.chmod(0o755)
    hangs = tmp_path / "hangs"
    _bounded_run(
        tmp_path,
        hangs,
        MEMORY_WORKER_STORE_TRANSPORT="cli",
        MEMORY_WORKER_STORE_BINARY=str(wrapper),
        FLAP_LITE=str(LITE),
        FLAP_COUNT=str(tmp_path / "count"),
        FLAP_HANGS=str(hangs),
    )
    # The answered writes between the hangs were real: the store was flapping, not hanging.
    assert int((tmp_path / "count").read_text()) >= 2 * len(_hangs(hangs)) - 1
    # Healthy again, through the same transport (a CLI-written entry's content differs from a
    # lite-written one's: no "embed" key), compared with a clean run through it.
    cli = {"MEMORY_WORKER_STORE_TRANSPORT": "cli", "MEMORY_WORKER_STORE_BINARY": str(LITE)}
    clean_cli = tmp_path / "clean-cli"
    lay_home(clean_cli, like=clean)
    assert run_once(clean_cli, **cli).returncode == 0
    _converges(tmp_path, clean_cli, **cli)


def test_run_once_on_a_flapping_mcp_server_is_bounded(tmp_path: Path, clean: Path) -> None:
    lay_home(tmp_path, like=clean)
    fake = write_fake_hypatia(tmp_path, LITE.as_posix())
    pids = tmp_path / "pids"
    hangs = tmp_path / "hangs"
    _bounded_run(
        tmp_path,
        hangs,
        MEMORY_WORKER_STORE_TRANSPORT="mcp",
        MEMORY_WORKER_STORE_BINARY=str(fake),
        FAKE_MODE="proxy",
        FAKE_FLAP_CALLS=str(tmp_path / "count"),
        FAKE_FLAP_HANGS=str(hangs),
        FAKE_PIDFILE=str(pids),
    )
    wait_for(
        lambda: not any(alive(pid) for pid in read_pids(pids)), 30, "the MCP servers to be gone"
    )
    _converges(tmp_path, clean)
