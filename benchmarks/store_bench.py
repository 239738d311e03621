"""Write message entries through each store transport and print the measured ratios.

    .venv/bin/python benchmarks/store_bench.py [--count 5000] [--cli-count 300]

Transports: hypatia-lite in-process (``lite``; ``batch`` is the same through ``write_batch``,
500 entries per transaction), the MCP adapter over one long-lived
``hypatia-lite mcp`` process (``mcp``), and the CLI adapter spawning ``hypatia-lite`` once per
call (``cli``). Every transport writes into its own fresh home. The CLI is measured on
``--cli-count`` writes (a process per call makes 5,000 take minutes) and its per-call cost is
extrapolated to ``--count`` explicitly; the printout says which figures were measured.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory_worker.memory.store.base import EntryWrite, MemoryStore
from dsh_memory_worker.memory.store.cli import CliStore
from dsh_memory_worker.memory.store.factory import StoreConfig, open_store
from dsh_memory_worker.memory.store.mcp import McpStore
from hypatia_lite.store import LiteStore


def _lite_binary() -> str:
    beside = Path(sys.executable).parent / "hypatia-lite"
    found = str(beside) if beside.exists() else shutil.which("hypatia-lite")
    if not found:
        raise SystemExit("hypatia-lite is not installed in this environment")
    return found


def _message(n: int) -> str:
    """A message-sized body (~1.2 KB) like the worker's ``msg-<session>-<n>`` entries."""
    line = f"Turn {n}: the assistant read the build log and proposed a fix for the flaky test."
    return f"## Role\n\nassistant\n\n## Content\n\n{(line + ' ') * 14}"


def _write(store: MemoryStore, count: int, session: str) -> tuple[float, float, float]:
    """Total seconds, and ms per write over the first and the last tenth of the writes (equal
    figures mean the per-write cost does not grow with the shelf)."""
    tenth = max(count // 10, 1)
    marks: dict[int, float] = {}
    started = time.perf_counter()
    for n in range(1, count + 1):
        if n in (tenth + 1, count - tenth + 1):
            marks[n] = time.perf_counter()
        if not store.knowledge_create(
            f"msg-{session}-{n}", _message(n), tags=["message"], scopes=["bench"]
        ):
            raise SystemExit(f"msg-{session}-{n} already existed: the home is not fresh")
    ended = time.perf_counter()
    first = marks.get(tenth + 1, ended) - started
    last = ended - marks.get(count - tenth + 1, started)
    return ended - started, 1000 * first / tenth, 1000 * last / tenth


def _run(name: str, make: Callable[[Path], MemoryStore], count: int, root: Path) -> float:
    home = root / name
    home.mkdir()
    store = make(home)
    try:
        store.knowledge_get("warm-up")  # start processes / open the shelf outside the timing
        elapsed, first, last = _write(store, count, name)
    finally:
        store.close()
    print(
        f"  {name:<5} {count:>6} writes measured in {elapsed:8.2f} s"
        f"  = {1000 * elapsed / count:8.3f} ms/write"
        f"  (first tenth {first:.3f}, last tenth {last:.3f} ms/write)",
        flush=True,
    )
    return elapsed / count


def _run_batched(count: int, batch: int, root: Path) -> float:
    """The same entries through hypatia-lite's ``write_batch`` (``batch`` per transaction)."""
    home = root / "batch"
    home.mkdir()
    store = LiteStore(home=home)
    entries = [
        EntryWrite(f"msg-batch-{n}", _message(n), tags=("message",), scopes=("bench",))
        for n in range(1, count + 1)
    ]
    try:
        started = time.perf_counter()
        for i in range(0, count, batch):
            created = store.write_batch(entries[i : i + batch]).created_names
            if len(created) != len(entries[i : i + batch]):
                raise SystemExit("write_batch found existing entries: the home is not fresh")
        elapsed = time.perf_counter() - started
        # What every MCP write reply adds: the pending-embedding counts, on the full shelf.
        counted = time.perf_counter()
        for _ in range(50):
            store.pending_embeddings()
        counting = (time.perf_counter() - counted) / 50
    finally:
        store.close()
    print(
        f"  batch {count:>6} writes measured in {elapsed:8.2f} s"
        f"  = {1000 * elapsed / count:8.3f} ms/write  (lite write_batch, {batch} per batch)",
        flush=True,
    )
    print(
        f"  pending-embedding counts on that {count}-entry shelf: {1000 * counting:.3f} ms",
        flush=True,
    )
    return elapsed / count


def _without_vectors(count: int, batch: int, root: Path) -> None:
    """Message entries as the worker writes them (no vector): lite one write at a time against
    ``write_batch``."""
    timings: list[float] = []
    for name in ("single-novec", "batch-novec"):
        home = root / name
        home.mkdir()
        store = LiteStore(home=home)
        entries = [
            EntryWrite(
                f"msg-{name}-{n}", _message(n), tags=("message",), scopes=("bench",), embed=False
            )
            for n in range(1, count + 1)
        ]
        try:
            started = time.perf_counter()
            if name.startswith("single"):
                created = sum(
                    store.knowledge_create(
                        e.name, e.data, tags=e.tags, scopes=e.scopes, embed=False
                    )
                    for e in entries
                )
            else:
                created = sum(
                    len(store.write_batch(entries[i : i + batch]).created_names)
                    for i in range(0, count, batch)
                )
            timings.append(time.perf_counter() - started)
        finally:
            store.close()
        if created != count:
            raise SystemExit(f"{name}: {count - created} entries already existed")
    single, batched = timings
    print(
        f"  without vectors (embed=false): lite {1000 * single / count:.3f} ms/write one at a"
        f" time, {1000 * batched / count:.3f} ms/write with write_batch ({batch} per"
        f" transaction): {single / batched:.1f}x faster",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="writes for lite and mcp")
    parser.add_argument("--cli-count", type=int, default=300, help="writes measured for cli")
    args = parser.parse_args(argv)
    binary = _lite_binary()

    def env(home: Path) -> dict[str, str]:
        return {"HYPATIA_LITE_HOME": str(home), "HYPATIA_LITE_EMBEDDER": "hash"}

    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        root = Path(tmp)
        print(f"Writing message entries (~{len(_message(1))} bytes each):")
        lite = _run(
            "lite",
            lambda h: open_store(StoreConfig(transport="lite", lite_home=h)),
            args.count,
            root,
        )
        batched = _run_batched(args.count, 500, root)
        _without_vectors(args.count, 500, root)
        mcp = _run(
            "mcp", lambda h: McpStore("default", binary, env=env(h), cwd=h), args.count, root
        )
        cli = _run(
            "cli", lambda h: CliStore("default", binary, env=env(h), cwd=h), args.cli_count, root
        )

    print(
        f"\n  cli extrapolated to {args.count} writes: {cli * args.count:.1f} s "
        f"(measured {args.cli_count} writes, {1000 * cli:.1f} ms each)"
    )
    print(f"  mcp is {cli / mcp:5.1f}x faster than cli-per-call (goal: >= 10x)")
    print(
        f"  lite in-process is {mcp / lite:5.1f}x faster than mcp "
        f"and {cli / lite:6.1f}x faster than cli"
    )
    print(f"  lite write_batch is {lite / batched:5.1f}x faster than lite one write at a time")
    ok = cli / mcp >= 10 and lite < mcp
    print("  goal met" if ok else "  goal NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
