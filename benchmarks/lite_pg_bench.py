"""Messages/s into a hypatia-lite shelf with 1 and 2 writer processes, SQLite against PostgreSQL,
in one run.

    .venv/bin/python benchmarks/lite_pg_bench.py [--messages 2000] [--batch 50]

Each writer is its own process with its own ``LiteStore`` (as ``memory-worker`` processes are)
and writes its own sessions the way ``log_span`` does: ``write_batch`` of ``--batch`` message
entries (~1.2 kB, no vector, as the worker writes them) plus their ``belongTo`` edges, get-before-
create inside the transaction. Writers start together (a barrier) and the wall time of the
slowest one counts. The PostgreSQL shelf lives in a throwaway database of ``--pg`` (the local
server by default), dropped afterwards; the SQLite shelf in a temp directory.

Read the 2-writer figures with the machine in mind: the script prints the CPU count. On a
2-core machine two writers plus the PostgreSQL server share two cores, so the second writer can
add little. SQLite runs one write transaction at a time (its write lock), so only the work
outside the transaction (content, JSON, embeddings) can overlap; PostgreSQL runs the writers'
transactions in parallel too.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dsh_memory_worker.memory.store.base import EntryWrite, StatementWrite
from hypatia_lite import shelves
from hypatia_lite.store import LiteStore


def _message(n: int) -> str:
    line = f"Turn {n}: the assistant read the build log and proposed a fix for the flaky test."
    return f"## Role\n\nassistant\n\n## Content\n\n{(line + ' ') * 14}"


def _writer(
    home: str, shelf: str, me: int, messages: int, batch: int, start: Any, out: Any
) -> None:
    store = LiteStore(shelf, home=Path(home), embedder=None)
    store.knowledge_get("warm-up")
    start.wait()
    began = time.perf_counter()
    session = f"w{me}"
    for i in range(0, messages, batch):
        names = [f"msg-{session}-{n}" for n in range(i, min(i + batch, messages))]
        done = store.write_batch(
            [
                EntryWrite(name, _message(n), tags=("message",), scopes=("bench",), embed=False)
                for n, name in enumerate(names, start=i)
            ],
            [StatementWrite(name, "belongTo", f"session-{session}", embed=False) for name in names],
        )
        if len(done.created_names) != len(names):
            raise SystemExit(f"writer {me}: entries already existed")
    out.put(time.perf_counter() - began)
    store.close()


def _measure(home: Path, shelf: str, writers: int, messages: int, batch: int) -> float:
    """Messages per second of ``writers`` processes writing ``messages`` each."""
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(home), shelf, n, messages, batch, start, out))
        for n in range(writers)
    ]
    for proc in procs:
        proc.start()
    start.wait()
    times = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a writer failed with exit code {proc.exitcode}")
    with LiteStore(shelf, home=home, embedder=None) as store:
        dump = store.dump()
    if len(dump["knowledge"]) != writers * messages:
        raise SystemExit(f"{len(dump['knowledge'])} entries instead of {writers * messages}")
    return writers * messages / max(times)


@contextmanager
def _database(admin: str) -> Iterator[str]:
    import psycopg

    name = f"lite_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        info = psycopg.conninfo.conninfo_to_dict(admin)
        yield (
            f"postgresql://{info.get('user', 'postgres')}@{info.get('host', '127.0.0.1')}:"
            f"{info.get('port', 5432)}/{name}"
        )
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages per writer")
    parser.add_argument("--batch", type=int, default=50, help="messages per write_batch")
    parser.add_argument(
        "--pg",
        default="host=127.0.0.1 port=5432 user=postgres dbname=postgres",
        help="libpq DSN of a database allowed to CREATE DATABASE",
    )
    args = parser.parse_args(argv)
    print(
        f"{os.cpu_count()} CPU cores here (writers and the PostgreSQL server share them); "
        f"{args.messages} messages per writer, {args.batch} per write_batch, plus edges"
    )
    results: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="lite-pg-bench-") as tmp:
        for writers in (1, 2):
            home = Path(tmp) / f"sqlite-{writers}"
            results["sqlite", writers] = _measure(
                home, "default", writers, args.messages, args.batch
            )
            with _database(args.pg) as url:
                home = Path(tmp) / f"pg-{writers}"
                shelves.connect(home, url, "pg")
                results["postgresql", writers] = _measure(
                    home, "pg", writers, args.messages, args.batch
                )
    for backend in ("sqlite", "postgresql"):
        one, two = results[backend, 1], results[backend, 2]
        print(
            f"  {backend:<10}  1 writer {one:8.0f} msg/s   2 writers {two:8.0f} msg/s"
            f"   ({two / one:.2f}x)"
        )
    print(
        f"  postgresql / sqlite: {results['postgresql', 1] / results['sqlite', 1]:.2f}x with 1"
        f" writer, {results['postgresql', 2] / results['sqlite', 2]:.2f}x with 2"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
