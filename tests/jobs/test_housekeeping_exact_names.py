"""The start-up store check matches message names exactly: after session ``ab``'s entries are
deleted from the store, the next ``run --once`` writes them again although session ``ab-1``'s
entries (``msg-ab-1-*``, which a ``msg-ab-%`` prefix also matches) are still there; the same for
``a_b`` next to ``axb`` (``_`` is a LIKE wildcard). The rerun converges on the first run's store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_cli
from conftest import REPO
from pipeline_support import cli_env, dump

from dsh_memory_worker.worker.jobs.housekeeping import has_message_entry, is_message_of
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import conversation

pytestmark = pytest.mark.integration

SESSIONS = ("ab", "ab-1", "a_b", "axb")


def _run_once(root: Path) -> subprocess.CompletedProcess[str]:
    done = run_cli(
        ["run", "--once", "--dsh-home", str(root / "dsh")], env=cli_env(root), timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done


def _delete_messages(root: Path, session_id: str) -> list[str]:
    with LiteStore("default", home=root / "lite") as store:
        names = [
            row["name"]
            for row in store.dump()["knowledge"]
            if is_message_of(row["name"], session_id)
        ]
        for name in names:
            assert store.knowledge_delete(name)
    return names


def test_is_message_of_is_exact() -> None:
    assert is_message_of("msg-ab-0", "ab") and is_message_of("msg-ab-12", "ab")
    assert not is_message_of("msg-ab-1-0", "ab")
    assert not is_message_of("msg-axb-3", "a_b")
    assert not is_message_of("msg-AB-3", "ab")
    assert not is_message_of("msg-ab-", "ab")
    assert is_message_of("msg-ab-1-0", "ab-1")


@pytest.mark.parametrize("wiped", ["ab", "a_b"])
def test_a_wiped_session_is_logged_again_next_to_a_prefix_sibling(
    tmp_path: Path, wiped: str
) -> None:
    for sid in SESSIONS:
        conversation(tmp_path / "dsh", sid, "/home/dev/exact", 3)
    _run_once(tmp_path)
    clean = dump(tmp_path)
    names = [row["name"] for row in clean["knowledge"]]
    for sid in SESSIONS:
        assert [n for n in names if is_message_of(n, sid)] == [f"msg-{sid}-{i}" for i in range(6)]

    deleted = _delete_messages(tmp_path, wiped)
    assert deleted == [f"msg-{wiped}-{i}" for i in range(6)]
    with LiteStore("default", home=tmp_path / "lite") as store:
        assert not has_message_entry(store, wiped)
        for other in SESSIONS:
            if other != wiped:
                assert has_message_entry(store, other)

    _run_once(tmp_path)
    assert dump(tmp_path) == clean
