"""What forgetting costs in hypatia-lite, measured in one run.

    .venv/bin/python benchmarks/forget_bench.py [--small 20000] [--large 200000]
        [--deletes 40] [--inserts 10000] [--check]

1. **A purge is O(entry), not O(shelf).** Two shelves of ``--small`` and ``--large`` message
   entries are built through ``LiteStore.write_batch``; then ``--deletes`` entries spread over
   each shelf are retracted one at a time with ``LiteStore.knowledge_delete`` (the real path:
   FTS5 secure-delete, zeroed pages, truncating WAL checkpoint). Prints the median and mean
   milliseconds per delete and the ratio large / small (``--check``: exit 1 when it is over 2).
2. **Secure deletion's own cost.** On the small shelf, the same deletes made durable by an
   fsync of the WAL (as before) instead of the truncating checkpoint: once with FTS5
   ``secure-delete`` and ``PRAGMA secure_delete`` still on, once with both off (hypatia-lite
   before secure deletion).
3. **The write path.** Insert throughput of ``--inserts`` entries (the rows and their FTS
   documents, batches of 500, fsync per batch) into a fresh shelf: with the stdlib's SQLite
   (no secure deletion, as hypatia-lite was), with sqlean.py's SQLite without it, and with it
   (as hypatia-lite is now); the median of three interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import sqlite3 as stdlib_sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dsh_memory_worker.memory.store.base import EntryWrite
from hypatia_lite import db
from hypatia_lite.fts import put_docs
from hypatia_lite.rows import content_text, make_content
from hypatia_lite.sqlitelib import sqlite3
from hypatia_lite.store import LiteStore

BATCH = 500
ROUNDS = 3
_INSERT = (
    "INSERT INTO knowledge(name, content, created_at, embed_wanted)"
    " VALUES (?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'), 0)"
)


def name(n: int) -> str:
    return f"msg-bench-{n // 234:04d}-{n % 234}"


def data(n: int) -> str:
    """A message entry of about 120 characters with a few distinct words."""
    role = "user" if n % 2 == 0 else "assistant"
    return (
        f"## Role\n{role}\n\n## Timestamp\n2026-12-01T13:06:08.{n % 1000:03d}Z\n\n"
        f"## Content\n{role} message {n} about topic{n % 977} word{n % 31} item{n}"
    )


def build(home: Path, count: int) -> tuple[LiteStore, float]:
    """A shelf of ``count`` entries; returns it and the insert throughput (entries/s)."""
    store = LiteStore(home=home, embedder=None)
    started = time.perf_counter()
    for start in range(0, count, BATCH * 4):
        stop = min(count, start + BATCH * 4)
        store.write_batch([EntryWrite(name(n), data(n), embed=False) for n in range(start, stop)])
    return store, count / (time.perf_counter() - started)


def victims(count: int, deletes: int, offset: int) -> list[str]:
    step = count // (deletes + 1)
    return [name(step * (i + 1) + offset) for i in range(deletes)]


def secure_deletes(store: LiteStore, names: list[str]) -> list[float]:
    times = []
    for entry in names:
        started = time.perf_counter()
        assert store.knowledge_delete(entry)
        times.append((time.perf_counter() - started) * 1000)
    return times


def synced_deletes(store: LiteStore, names: list[str], *, secure: bool) -> list[float]:
    """The deletes made durable by an fsync of the WAL (no checkpoint), as hypatia-lite made
    them before secure deletion; ``secure``: FTS5 secure-delete and zeroed pages still on."""
    conn = store.conn
    flag = int(secure)
    conn.execute(f"INSERT INTO docs_fts(docs_fts, rank) VALUES ('secure-delete', {flag})")
    conn.execute(f"PRAGMA secure_delete = {flag}")
    times = []
    for entry in names:
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        removed = conn.execute("DELETE FROM knowledge WHERE name = ?", (entry,)).rowcount
        conn.execute("DELETE FROM docs WHERE catalog = 'knowledge' AND key = ?", (entry,))
        conn.execute("COMMIT")
        db.sync_wal(conn)
        times.append((time.perf_counter() - started) * 1000)
        assert removed == 1
    return times


def raw_inserts(path: Path, module: Any, count: int, secure: bool) -> float:
    """Rows + FTS documents as ``write_batch`` writes them, on ``module``'s SQLite; entries/s."""
    conn = module.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")
    conn.executescript(db._SCHEMA)
    if secure:
        conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('secure-delete', 1)")
    started = time.perf_counter()
    for start in range(0, count, BATCH):
        batch = range(start, min(count, start + BATCH))
        contents = [(name(n), make_content(data(n))) for n in batch]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_INSERT, [(k, content_text(c)) for k, c in contents])
        put_docs(conn, [("knowledge", k, c) for k, c in contents])
        conn.execute("COMMIT")
        fd = os.open(f"{path}-wal", os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    elapsed = time.perf_counter() - started
    conn.close()
    return count / elapsed


def _ms(times: list[float]) -> str:
    return f"median {statistics.median(times):7.2f} ms, mean {statistics.fmean(times):7.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=200_000)
    parser.add_argument("--deletes", type=int, default=40)
    parser.add_argument("--inserts", type=int, default=10_000)
    parser.add_argument("--check", action="store_true", help="exit 1 when large/small > 2")
    args = parser.parse_args(argv)
    print(f"SQLite: sqlean.py {sqlite3.sqlite_version} (stdlib {stdlib_sqlite3.sqlite_version})")
    with tempfile.TemporaryDirectory(prefix="forget-bench-") as tmp:
        root = Path(tmp)
        medians = {}
        variants: dict[str, list[float]] = {}
        for label, count in (("small", args.small), ("large", args.large)):
            store, rate = build(root / label, count)
            times = secure_deletes(store, victims(count, args.deletes, 0))
            size = (store.path / db.DB_FILE).stat().st_size / 1e6  # checkpointed: all of it
            medians[label] = statistics.median(times)
            print(
                f"retract one entry, {count:>7} entries ({size:6.1f} MB, built at "
                f"{rate:7.0f} entries/s): {_ms(times)}"
            )
            if label == "small":
                variants["secure, fsync instead of checkpoint"] = synced_deletes(
                    store, victims(count, args.deletes, 1), secure=True
                )
                variants["off (before)"] = synced_deletes(
                    store, victims(count, args.deletes, 2), secure=False
                )
            store.close()
        ratio = medians["large"] / medians["small"]
        print(f"large / small per-delete ratio: {ratio:.2f} (at most 2 allowed)")
        variants = {"secure + truncating checkpoint (now)": [medians["small"]], **variants}
        for variant, times in variants.items():
            print(
                f"per delete on {args.small} entries, {variant + ':':<37} "
                f"{statistics.median(times):7.2f} ms median"
            )
        rates: dict[str, list[float]] = {"old": [], "off": [], "on": []}
        for rep in range(ROUNDS):  # interleaved, so a busy moment of the disk hits all three
            for label, module, secure in (
                ("old", stdlib_sqlite3, False),
                ("off", sqlite3, False),
                ("on", sqlite3, True),
            ):
                rates[label].append(
                    raw_inserts(root / f"{label}-{rep}.sqlite", module, args.inserts, secure=secure)
                )
        old, new_off, new_on = (statistics.median(rates[k]) for k in ("old", "off", "on"))
        print(
            f"insert throughput, {args.inserts} entries: stdlib SQLite {old:7.0f}/s, "
            f"sqlean.py without secure deletion {new_off:7.0f}/s, with it {new_on:7.0f}/s "
            f"({new_on / old:.2f}x of before)"
        )
    return 1 if args.check and ratio > 2 else 0


if __name__ == "__main__":
    raise SystemExit(main())
