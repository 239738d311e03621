"""``log_span`` through batched writes leaves exactly the store of one-by-one writes.

The same DSH home (titled sessions → ``belongTo`` edges, a withdrawal, a span long enough to be
written in slices and in several batches) is processed twice: once into hypatia-lite with its
native one-transaction batches, once through a store that only has the protocol's single-item
methods (``write_batch`` falls back to one call per item). The dumps must be equal. A crash in
the middle of a batch fails the job without advancing the watermark; the next run completes it
to the same store.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from pipeline_support import process

from dsh_memory_worker.memory.store.base import BatchWriter, MemoryStore, write_batch
from dsh_memory_worker.worker.jobs import store_writes
from hypatia_lite import sqlite_backend
from hypatia_lite.store import LiteStore

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, conversation, embedded_runtime


class OneByOne:
    """A store offering only the protocol's single-item methods (no ``write_batch``)."""

    def __init__(self, inner: LiteStore) -> None:
        self._inner = inner
        self.shelf = inner.shelf
        self.creates = 0

    def knowledge_create(self, *args: Any, **kwargs: Any) -> bool:
        self.creates += 1
        return self._inner.knowledge_create(*args, **kwargs)

    def statement_create(self, *args: Any, **kwargs: Any) -> bool:
        self.creates += 1
        return self._inner.statement_create(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "write_batch":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _home(root: Path) -> None:
    dsh = root / "dsh"
    conversation(
        dsh, "titled", "/home/dev/alpha", 40, title="Batch contract session", batch_turns=5
    )
    conversation(dsh, "plain", "/home/dev/beta", 12, batch_turns=3)
    log = SessionLogWriter(dsh, "rewound", "/home/dev/alpha")
    first = log.turn("keep me", "kept")
    log.title("Rewound session", first.user_seq)
    second = log.turn("withdraw me", "withdrawn answer")
    log.turn("and me", "also withdrawn")
    log.rewind(second.user_seq)
    log.turn("after the rewind", "fresh answer")
    log.flush()


def _process(root: Path, wrap: bool) -> list[Any]:
    runtime = embedded_runtime(root, force_idle=True, max_span_events=60)
    if wrap:
        runtime.store_factory = lambda shelf: OneByOne(LiteStore(shelf, home=root / "lite"))
    results = list(process(runtime, consolidation=False).stats.results)
    if wrap:
        store = runtime.store("default")
        assert isinstance(store, OneByOne) and store.creates > 0
        assert not isinstance(store, BatchWriter)
    runtime.close()
    return results


def _dump(root: Path) -> dict[str, Any]:
    with LiteStore("default", home=root / "lite") as store:
        return store.dump()


def _logged(results: list[Any]) -> tuple[int, int]:
    spans = [r for r in results if r.job == "log_span" and r.status == "done"]
    return sum(r.written for r in spans), sum(r.edges for r in spans)


@pytest.mark.integration
def test_batched_and_one_by_one_log_span_leave_the_same_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_writes, "WRITE_BATCH", 7)  # several batches per slice
    batched, single = tmp_path / "batched", tmp_path / "single"
    _home(batched)
    shutil.copytree(batched / "dsh", single / "dsh")
    batched_results = _process(batched, wrap=False)
    single_results = _process(single, wrap=True)
    got, want = _dump(batched), _dump(single)
    assert got == want
    names = {row["name"] for row in got["knowledge"]}
    assert {f"msg-titled-{n}" for n in range(80)} <= names
    assert {f"msg-plain-{n}" for n in range(24)} <= names
    assert "session-titled" in names and "session-rewound" in names
    # Withdrawn messages (ordinals 2..5 of "rewound") are never written, nor linked.
    assert not {f"msg-rewound-{n}" for n in range(2, 6)} & names
    triples = {row["triple"] for row in got["statements"]}
    assert {f"msg-titled-{n},belongTo,session-titled" for n in range(80)} <= triples
    assert "msg-rewound-3,belongTo,session-rewound" not in triples
    assert _logged(batched_results) == _logged(single_results)
    assert _logged(batched_results)[0] == len([n for n in names if n.startswith("msg-")])


class CrashWatch:
    """hypatia-lite whose ``write_batch`` snapshots the store when a batch fails."""

    def __init__(self, inner: LiteStore) -> None:
        self._inner = inner
        self.shelf = inner.shelf
        self.crashes: list[tuple[list[str], dict[str, Any]]] = []

    def write_batch(self, entries: Any, statements: Any = ()) -> Any:
        try:
            return self._inner.write_batch(entries, statements)
        except OSError:
            keys = [e.name for e in entries] + [s.triple for s in statements]
            self.crashes.append((keys, self._inner.dump()))
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.integration
def test_a_crash_mid_batch_leaves_whole_batches_and_a_retry_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_writes, "WRITE_BATCH", 10)
    reference, crashy = tmp_path / "reference", tmp_path / "crashy"
    _home(reference)
    shutil.copytree(reference / "dsh", crashy / "dsh")
    _process(reference, wrap=False)
    real = sqlite_backend.put_doc_rows
    calls = {"n": 0}

    def crash_once(conn: Any, rows: list[tuple[str, ...]]) -> None:
        # The 25th document written is in the middle of a batch (inside its transaction).
        before, calls["n"] = calls["n"], calls["n"] + len(rows)
        if before < 25 <= calls["n"]:
            real(conn, rows[: 24 - before])
            raise OSError("injected crash mid-batch")
        real(conn, rows)

    monkeypatch.setattr(sqlite_backend, "put_doc_rows", crash_once)
    watch: list[CrashWatch] = []

    def factory(shelf: str) -> CrashWatch:
        watch.append(CrashWatch(LiteStore(shelf, home=crashy / "lite")))
        return watch[0]

    runtime = embedded_runtime(crashy, force_idle=True, max_span_events=60)
    runtime.store_factory = factory
    results = list(process(runtime, consolidation=False).stats.results)
    runtime.close()
    # The failing batch left nothing: none of its keys exist right after the crash, and what
    # earlier batches wrote is whole (each session's messages are a prefix of its ordinals).
    ((crashed, snapshot),) = watch[0].crashes
    assert len(crashed) >= 2
    present = {row["name"] for row in snapshot["knowledge"]} | {
        row["triple"] for row in snapshot["statements"]
    }
    assert not set(crashed) & present
    for sid in ("titled", "plain", "rewound"):
        ordinals = sorted(
            int(n.rsplit("-", 1)[1])
            for n in present
            if n.startswith(f"msg-{sid}-") and "," not in n
        )
        if sid != "rewound":
            assert ordinals == list(range(len(ordinals)))
    failed = [r for r in results if r.job == "log_span" and r.status != "done"]
    assert failed and "injected crash mid-batch" in failed[0].detail
    # The job's retry completed the span: the store equals a run that never crashed.
    assert _dump(crashy) == _dump(reference)


def test_write_batch_falls_back_to_single_items(tmp_path: Path) -> None:
    from dsh_memory_worker.memory.store.base import EntryWrite, StatementWrite

    inner = LiteStore(home=tmp_path / "lite")
    store = OneByOne(inner)
    assert isinstance(store, MemoryStore)
    entries = [
        EntryWrite("a", "x", tags=("message",), embed=False),
        EntryWrite("a", "y", embed=False),
        EntryWrite("b", "z", embed=False),
    ]
    statements = [
        StatementWrite("a", "belongTo", "b", embed=False),
        StatementWrite("a", "belongTo", "b", data="again", embed=False),
    ]
    result = write_batch(store, entries, statements)  # type: ignore[arg-type]
    assert result.created_names == ("a", "b")
    assert result.created_triples == ("a,belongTo,b",)
    assert store.creates == 5
    assert inner.knowledge_get_row("a")["content"]["data"] == "x"
    inner.close()


@pytest.mark.integration
def test_a_later_span_writes_its_entries_and_edges_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the session node exists, a span's entries and their ``belongTo`` edges commit
    together: a crash while the edges are written leaves none of the span's entries either."""
    log = conversation(
        tmp_path / "dsh", "titled", "/home/dev/alpha", 3, title="One transaction", batch_turns=1
    )
    runtime = embedded_runtime(tmp_path)
    process(runtime, consolidation=False)  # ordinals 0..5, the node and its edges
    runtime.close()
    assert "session-titled" in {row["name"] for row in _dump(tmp_path)["knowledge"]}
    log.turn("a later prompt", "a later answer")  # ordinals 6 and 7
    log.flush()
    real = sqlite_backend.put_doc_rows
    failed: list[list[str]] = []

    def fail_once(conn: Any, rows: list[tuple[str, ...]]) -> None:
        if not failed and any(row[0] == "statement" for row in rows):
            failed.append([row[1] for row in rows])
            raise OSError("injected crash mid-batch")
        real(conn, rows)

    monkeypatch.setattr(sqlite_backend, "put_doc_rows", fail_once)
    watch: list[CrashWatch] = []

    def factory(shelf: str) -> CrashWatch:
        watch.append(CrashWatch(LiteStore(shelf, home=tmp_path / "lite")))
        return watch[0]

    runtime = embedded_runtime(tmp_path)
    runtime.store_factory = factory
    results = list(process(runtime, consolidation=False).stats.results)
    runtime.close()
    later = ["msg-titled-6", "msg-titled-7"]
    edges = [f"{name},belongTo,session-titled" for name in later]
    assert failed == [later + edges]  # one batch: the entries, then their edges
    ((keys, snapshot),) = watch[0].crashes
    assert keys == later + edges
    assert not set(later) & {row["name"] for row in snapshot["knowledge"]}
    assert not set(edges) & {row["triple"] for row in snapshot["statements"]}
    # The job's retry wrote both, in one batch.
    spans = [r for r in results if r.job == "log_span" and r.status == "done"]
    assert [(r.written, r.edges) for r in spans] == [(2, 2)]
    dump = _dump(tmp_path)
    assert set(later) <= {row["name"] for row in dump["knowledge"]}
    assert {f"msg-titled-{n},belongTo,session-titled" for n in range(8)} == {
        row["triple"] for row in dump["statements"]
    }
