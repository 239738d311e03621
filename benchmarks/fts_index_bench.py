"""How hypatia-lite indexes new full-text documents, measured in one run.

    .venv/bin/python benchmarks/fts_index_bench.py [--docs 28000] [--batches 120]

The same small documents (message-entry and ``belongTo``-edge sized, as the worker writes
them) go into a fresh ``docs`` table + ``docs_fts`` FTS5 index three ways, in ``--batches``
write transactions:

- ``no index``: the ``docs`` rows alone (the floor);
- ``insert trigger``: an ``AFTER INSERT`` trigger indexes each row (hypatia-lite before this
  benchmark; Hypatia's own layout);
- ``insert … select``: the rows first, then one ``INSERT INTO docs_fts … SELECT … WHERE id > ?``
  per transaction (hypatia-lite now, ``hypatia_lite.fts.put_docs``).

Both indexed variants are checked with FTS5's ``integrity-check`` and the same query, so they
hold the same index. Prints µs per document and the ratio trigger / insert-select.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

_DOCS = """
CREATE TABLE docs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, catalog TEXT NOT NULL, key TEXT NOT NULL,
    fts_key TEXT NOT NULL, fts_data TEXT NOT NULL, fts_tags TEXT NOT NULL,
    fts_synonyms TEXT NOT NULL, UNIQUE (catalog, key));
"""
_FTS = """
CREATE VIRTUAL TABLE docs_fts USING fts5(fts_key, fts_data, fts_tags, fts_synonyms,
    content='docs', content_rowid='id', tokenize='porter unicode61');
"""
_TRIGGER = """
CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
    INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)
    VALUES (new.id, new.fts_key, new.fts_data, new.fts_tags, new.fts_synonyms);
END;
"""
_INSERT = (
    "INSERT INTO docs(catalog, key, fts_key, fts_data, fts_tags, fts_synonyms)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_INDEX_NEW = (
    "INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)"
    " SELECT id, fts_key, fts_data, fts_tags, fts_synonyms FROM docs WHERE id > ?"
)


def documents(count: int) -> list[tuple[str, str, str, str, str, str]]:
    """Alternating message entries (~95 characters of markdown) and their ``belongTo`` edges."""
    rows = []
    for n in range(count // 2):
        name = f"msg-bench-{n // 234:04d}-{n % 234}"
        role = "user" if n % 2 == 0 else "assistant"
        data = (
            f"## Role\n{role}\n\n## Timestamp\n2026-12-01T13:06:08.{n % 1000:03d}Z\n\n"
            f"## Content\n{role} {n} of bench-{n // 234:04d}"
        )
        rows.append(("knowledge", name, name, data, "message", ""))
        triple = f"{name},belongTo,session-bench-{n // 234:04d}"
        rows.append(("statement", triple, triple, "", "", ""))
    return rows


def _run(
    path: Path, docs: list[tuple[str, str, str, str, str, str]], batches: int, mode: str
) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.executescript(
        _DOCS + ("" if mode == "none" else _FTS) + (_TRIGGER if mode == "trigger" else "")
    )
    step = -(-len(docs) // batches)
    started = time.perf_counter()
    for i in range(0, len(docs), step):
        conn.execute("BEGIN IMMEDIATE")
        before = conn.execute("SELECT coalesce(max(id), 0) FROM docs").fetchone()[0]
        conn.executemany(_INSERT, docs[i : i + step])
        if mode == "select":
            conn.execute(_INDEX_NEW, (before,))
        conn.execute("COMMIT")
    seconds = time.perf_counter() - started
    if mode != "none":
        conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('integrity-check', 1)")
        hits = conn.execute(
            "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH 'belongTo'"
        ).fetchone()[0]
        if hits != len(docs) // 2:
            raise SystemExit(f"{mode}: {hits} edges found by search, expected {len(docs) // 2}")
    conn.close()
    return seconds


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=28_000)
    parser.add_argument("--batches", type=int, default=120)
    args = parser.parse_args(argv)
    docs = documents(args.docs)
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fts-bench-") as tmp:
        for mode, label in (
            ("none", "no index"),
            ("trigger", "insert trigger"),
            ("select", "insert … select"),
        ):
            seconds = _run(Path(tmp) / f"{mode}.sqlite", docs, args.batches, mode)
            result[mode] = seconds
            print(f"{label:16s} {seconds:6.2f} s  {seconds / len(docs) * 1e6:6.1f} µs/document")
    print(
        f"indexing cost (above the bare rows), trigger / insert … select: "
        f"{(result['trigger'] - result['none']) / (result['select'] - result['none']):.1f}×"
    )
    return result


if __name__ == "__main__":
    main()
