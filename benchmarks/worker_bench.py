"""Worker benchmarks, measured in one run on a generated DSH home.

1. Throughput: end-to-end messages/s of the embedded pipeline (watcher + in-process runner +
   in-process hypatia-lite, as ``memory-worker run --once`` does it) against the bare
   decode + parse rate of the same logs (and against the floor below), on two generated homes of
   ``--sessions`` sessions × ``--turns × 6`` events: chat turns (titled sessions, so a
   ``belongTo`` edge per message) and tool turns (the reader's synthetic generator). Each
   workload is also run as ``memory-worker run --once --jobs N`` does it, with N =
   ``os.cpu_count()`` processes (:class:`worker.run.once_parallel.OnceChildren` +
   :func:`~worker.run.once_parallel.run_once` in a fresh Python process, so the children are forked
   before anything is opened; child start-up and the final pass included), on a fresh state and
   store, against the same bare figure. That run adapts as ``run --once --jobs N`` does (fewer
   processes when fewer cores are free: :mod:`worker.run.cpu_budget`) and prints how many it
   used; ``MEMORY_WORKER_JOBS_ADAPT=false`` in the environment forces exactly N.
   The floor, measured in the same run: bare decode + parse (above) plus a bulk load of exactly
   the rows the one-process run wrote (entries, statements, full-text documents, read back from
   its shelf) into a fresh shelf with the same schema in one transaction (``executemany``, then
   one ``INSERT … SELECT`` into the FTS table; :func:`bulk_floor`). Printed: end to end against
   the floor (goal ≥ 0.8) and against bare decode, and ``--jobs N`` against one process (goal:
   never slower; ≥ 1.6× with 2 free cores). ``--profile SESSIONS`` adds a cProfile breakdown of
   a one-process chat run by area (decode, plan + render, state DB, store, job bookkeeping,
   watcher) and writes the top functions to ``worker_profile.txt`` beside the JSON.
2. Latency: ``turn/end`` appended to a followed log → its entries in the store, through
   ``memory-worker daemon`` + a Celery ``memory-worker worker`` + Redis, state in PostgreSQL
   (goal: p95 < 1 s). The daemon's poll interval is part of this latency and is printed.

.venv/bin/python benchmarks/worker_bench.py [--sessions 300] [--turns 117] [--samples 60]
    [--jobs N] [--profile SESSIONS] [--skip-latency] [--out benchmarks/out/worker_bench.json]
    [--idle 300 3000 [--idle-seconds 60]]

The idle cost (CPU and RSS of ``run`` and ``daemon`` following N idle sessions) is measured by
``benchmarks/idle_bench.py``; ``--idle N…`` runs it at the end of this run too (its figures go
into this JSON under ``idle`` and into ``idle_bench.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from hypatia_lite.sqlitelib import sqlite3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_dshgen import SessionLogWriter, conversation, embedded_runtime

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.messages import is_loggable
from dsh_memory_worker.worker.run.once_children import OnceChildren
from dsh_memory_worker.worker.run.once_parallel import run_once
from dsh_memory_worker.worker.run.runner import InProcessRunner
from dsh_memory_worker.worker.watch.watcher import Watcher
from hypatia_lite import db, shelves

BIN = Path(sys.executable).parent
OUT = Path(__file__).resolve().parent / "out"


def generate(home: Path, sessions: int, turns: int) -> None:
    """Chat turns: prompt → answer (6 events, 2 messages per turn), every session titled."""
    for i in range(sessions):
        conversation(
            home,
            f"bench-{i:04d}",
            f"/home/dev/project-{i % 7}",
            turns,
            compressed=True,
            title=f"Benchmark session {i}",
            batch_turns=4,
        )


def generate_tool_turns(home: Path, sessions: int, events: int) -> None:
    """Tool turns from the reader's synthetic generator: prompt → tool call → tool result →
    answer (9 events, 2 messages per turn), untitled."""
    from dsh_memory_worker.memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log

    for i in range(sessions):
        sid, cwd = f"tools-{i:04d}", f"/home/dev/project-{i % 7}"
        directory = home / "sessions" / f"--home-dev-project-{i % 7}--" / sid
        directory.mkdir(parents=True, exist_ok=True)
        write_log(
            directory / "session.v4.jsonl.zstd",
            synthetic_rows(events),
            compressed=True,
            batch=36,
            header=synthetic_header(sid, cwd),
        )


def bare_rate(home: Path) -> dict[str, float]:
    started = time.perf_counter()
    events = messages = 0
    for path in sorted(home.rglob("session.v4.jsonl.zstd")):
        log = read_log(path)
        events += len(log.events)
        messages += sum(1 for e in log.events if is_loggable(e))
    seconds = time.perf_counter() - started
    return {
        "events": events,
        "messages": messages,
        "seconds": seconds,
        "messages_per_s": messages / seconds,
        "events_per_s": events / seconds,
    }


def embedded_rate(root: Path, profiler: Any = None) -> dict[str, float]:
    """``profiler`` (a ``cProfile.Profile``): enabled for the timed part only."""
    runtime = embedded_runtime(root, force_idle=True)
    runner = InProcessRunner(runtime)
    # As ``run --once``: each session's jobs run right after its scan, on the scan's decode.
    watcher = Watcher(runtime, runner.submit, after_session=lambda _sid: runner.run_ready())
    if profiler is not None:
        profiler.enable()
    started = time.perf_counter()
    watcher.poll_once()
    watcher.reconcile()
    scanned = time.perf_counter() - started
    runner.drain()
    seconds = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
    runtime.close()
    stats = runner.stats
    return {
        "seconds": seconds,
        "scan_with_jobs_seconds": scanned,
        "drain_seconds": seconds - scanned,
        "written": stats.written,
        "edges": stats.edges,
        "failed": stats.failed,
    }


def _shelf_db(lite: Path) -> Path:
    return shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE


_K_COLS = "name, content, created_at, embed_wanted, embedding, embedding_model"
_S_COLS = (
    "triple, head, relation, tail, content, created_at, embed_wanted, embedding, embedding_model"
)
_D_COLS = "catalog, key, fts_key, fts_data, fts_tags, fts_synonyms"


def bulk_floor(source_lite: Path, target: Path) -> dict[str, float]:
    """The store half of the floor: exactly the rows the end-to-end run wrote (read back from
    its shelf, untimed) bulk-loaded into a fresh shelf with the same schema (``db.connect``) in
    ONE write transaction (``db.write``: ``BEGIN IMMEDIATE`` … ``COMMIT`` + the WAL fsync):
    ``executemany`` per table, then one ``INSERT … SELECT`` into the FTS table. Checked with
    FTS5's ``integrity-check`` and the row counts afterwards (untimed)."""
    with sqlite3.connect(_shelf_db(source_lite)) as src:
        knowledge = src.execute(f"SELECT {_K_COLS} FROM knowledge ORDER BY id").fetchall()
        statements = src.execute(f"SELECT {_S_COLS} FROM statement ORDER BY id").fetchall()
        docs = src.execute(f"SELECT {_D_COLS} FROM docs ORDER BY id").fetchall()
    conn = db.connect(target)  # the same schema, secure-delete on, WAL, synchronous NORMAL
    try:
        started = time.perf_counter()
        with db.write(conn):
            conn.executemany(
                f"INSERT INTO knowledge({_K_COLS}) VALUES (?, ?, ?, ?, ?, ?)", knowledge
            )
            conn.executemany(
                f"INSERT INTO statement({_S_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", statements
            )
            conn.executemany(f"INSERT INTO docs({_D_COLS}) VALUES (?, ?, ?, ?, ?, ?)", docs)
            conn.execute(
                "INSERT INTO docs_fts(rowid, fts_key, fts_data, fts_tags, fts_synonyms)"
                " SELECT id, fts_key, fts_data, fts_tags, fts_synonyms FROM docs"
            )
        seconds = time.perf_counter() - started
        conn.execute("INSERT INTO docs_fts(docs_fts, rank) VALUES ('integrity-check', 1)")
        counts = [
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("knowledge", "statement", "docs")
        ]
    finally:
        conn.close()
    if counts != [len(knowledge), len(statements), len(docs)]:
        raise SystemExit(
            f"bulk load wrote {counts} rows, expected "
            f"{[len(knowledge), len(statements), len(docs)]}"
        )
    return {
        "seconds": seconds,
        "entries": len(knowledge),
        "statements": len(statements),
        "documents": len(docs),
    }


def parallel_rate(home: Path, root: Path, jobs: int) -> dict[str, float]:
    """``run --once --jobs N``'s code path on ``home`` with a fresh state and store under
    ``root``, in a fresh Python process (:func:`_parallel_run`)."""
    embedded_runtime(root, dsh_home=home).close()  # the state database, migrated, untimed
    done = subprocess.run(
        [sys.executable, __file__, "--parallel-run", str(home), str(root), str(jobs)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"--jobs {jobs} run failed: {done.stderr.strip()}")
    measured: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return measured


def _parallel_run(home: Path, root: Path, jobs: int) -> dict[str, float]:
    """In a process that has opened nothing yet, as ``run --once --jobs N``: fork the children,
    open the runtime (migrated already by :func:`parallel_rate`), run. The clock runs from the
    fork to the end of the final pass."""
    from dsh_memory_worker.worker.jobs.runtime import build_runtime
    from dsh_memory_worker.worker.settings import load_settings

    settings = load_settings(None, dsh_home=home, data_dir=root / "data", lite_home=root / "lite")
    started = time.perf_counter()
    children = OnceChildren(settings, settings.store_shelf, jobs)
    try:
        runtime = build_runtime(
            settings, owner=f"bench:{root.name}", force_idle=True, migrate=False
        )
        totals = run_once(runtime, settings.store_shelf, children=children)
    finally:
        children.stop()
    seconds = time.perf_counter() - started
    runtime.close()
    return {
        "jobs": jobs,
        "processes": totals.processes,
        "seconds": seconds,
        "children_seconds": totals.children_seconds,
        "final_pass_seconds": totals.final_seconds,
        "written": totals.written,
        "edges": totals.edges,
        "failed": totals.failed,
    }


def turn_latencies(
    logs: list[SessionLogWriter], lite: Path, samples: int, every: float
) -> list[float]:
    """Append ``samples`` turns round-robin to ``logs`` (followed by a running worker writing the
    lite home ``lite``); for each, the seconds from the flushed ``turn/end`` until its assistant
    message is in the store, checked every ``every`` seconds."""
    waits: list[float] = []
    for n in range(samples):
        log = logs[n % len(logs)]
        log.turn(f"question {n}", f"answer {n}")
        wanted = f"msg-{log.session_id}-{2 * log.turn_no - 1}"
        log.flush()
        started = time.perf_counter()
        while wanted not in _store_names(lite, wanted):
            if time.perf_counter() - started > 30:
                raise SystemExit(f"{wanted} did not appear within 30 s")
            time.sleep(every)
        waits.append(time.perf_counter() - started)
        time.sleep(0.05)
    return waits


def _store_names(lite: Path, prefix: str) -> set[str]:
    try:
        path = shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE
    except shelves.ShelfError:
        return set()
    if not path.exists():
        return set()
    with sqlite3.connect(path) as conn:
        try:
            return {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM knowledge WHERE name LIKE ?", (prefix + "%",)
                )
            }
        except sqlite3.OperationalError:  # the worker is still creating the shelf's schema
            return set()


def latency(root: Path, samples: int, poll_s: float) -> dict[str, Any]:
    import psycopg

    database = f"bench_{uuid.uuid4().hex[:8]}"
    admin_url = "postgresql://postgres@127.0.0.1:5432/postgres"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    home, lite = root / "dsh", root / "lite"
    env = {
        **os.environ,
        "MEMORY_WORKER_STATE_URL": f"postgresql://postgres@127.0.0.1:5432/{database}",
        "MEMORY_WORKER_BROKER_URL": "redis://127.0.0.1:6379/13",
        "MEMORY_WORKER_LITE_HOME": str(lite),
        "MEMORY_WORKER_DSH_HOME": str(home),
        "MEMORY_WORKER_POLL_INTERVAL_S": str(poll_s),
        "MEMORY_WORKER_LOG_LEVEL": "WARNING",
    }
    logs = [SessionLogWriter(home, f"live-{i}", "/home/dev/live") for i in range(8)]
    for log in logs:
        log.turn("warm up", "ok")
        log.flush()
    procs = []
    try:
        for args in (["daemon"], ["worker", "--pool", "solo"]):
            procs.append(
                subprocess.Popen(
                    [str(BIN / "memory-worker"), *args, "--queue", queue],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        deadline = time.monotonic() + 60
        while len(_store_names(lite, "msg-live-")) < 16:
            if time.monotonic() > deadline:
                raise SystemExit("the daemon and worker did not start within 60 s")
            time.sleep(0.05)
        waits = turn_latencies(logs, lite, samples, every=0.005)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=15)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    waits.sort()
    return {
        "samples": len(waits),
        "poll_interval_s": poll_s,
        "p50_s": statistics.median(waits),
        "p95_s": waits[max(0, round(0.95 * len(waits)) - 1)],
        "max_s": waits[-1],
    }


# Where self time is charged, by the file of the function (C functions: by their caller's file).
_AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "decode (dsh_memory_worker.memory.dsh, zstandard, json)",
        ("/memory/dsh/", "zstandard", "/json/"),
    ),
    (
        "plan + render (spans, entries, messages, redaction)",
        (
            "/memory/span",
            "/memory/entries",
            "/memory/messages",
            "/memory/content",
            "/memory/redaction/",
            "/memory/titles",
            "/memory/withdrawal",
            "/memory/printable",
            "/memory/constants",
            "/memory/ledger",
            "/re/",
            "/re.py",
            "sre_",
            "/datetime",
            "zoneinfo",
        ),
    ),
    ("state DB (dsh_memory_worker.worker.state, SQLAlchemy)", ("/worker/state/", "/sqlalchemy/")),
    (
        "store writes incl. FTS (hypatia_lite, dsh_memory_worker.memory.store)",
        ("/hypatia_lite/", "/memory/store/"),
    ),
    (
        "job bookkeeping (dsh_memory_worker.worker.jobs, runner, pipeline)",
        (
            "/worker/jobs/",
            "/worker/run/",
            "/worker/runner",
            "/worker/pipeline",
            "/worker/names",
            "/worker/owed",
            "/worker/triggers",
            "/worker/figures",
            "/worker/observability",
        ),
    ),
    (
        "watcher + scan (watch, discovery, scan digest)",
        ("/worker/watch", "/worker/discovery", "/worker/scan_"),
    ),
)


def _area(filename: str) -> str | None:
    for area, needles in _AREAS:
        if any(n in filename for n in needles):
            return area
    return None


def profile(root: Path, sessions: int, turns: int, top: int = 25) -> dict[str, Any]:
    """cProfile the one-process end-to-end run on a chat home (profiler overhead included:
    shares, not seconds, are the figure). Self time is summed by area; a C function's self time
    (``sqlite3`` execute, ``json`` scanner, ``zstd`` decompress…) goes to the areas of its
    callers, in proportion to their calls' time."""
    import cProfile
    import io
    import pstats

    generate(root / "dsh", sessions, turns)
    messages = bare_rate(root / "dsh")["messages"]
    profiler = cProfile.Profile()
    e2e = embedded_rate(root, profiler)
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    areas: dict[str, float] = {}

    def charge(func: Any, seconds: float, depth: int = 0) -> None:
        filename = func[0]
        area = _area(filename) if filename != "~" else None
        if area is None and (filename == "~" or filename.startswith("<")) and depth < 3:
            callers = raw[func][4]
            total = sum(c[2] for c in callers.values()) or 0.0
            if total > 0:
                for caller, c in callers.items():
                    charge(caller, seconds * c[2] / total, depth + 1)
                return
        areas[area or "other (interpreter, stdlib, pydantic, …)"] = (
            areas.get(area or "other (interpreter, stdlib, pydantic, …)", 0.0) + seconds
        )

    for func, (_cc, _nc, tt, _ct, _callers) in raw.items():
        charge(func, tt)
    total = sum(areas.values())
    text = io.StringIO()
    for order in ("tottime", "cumulative"):
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
    return {
        "sessions": sessions,
        "messages": messages,
        "seconds_profiled": e2e["seconds"],
        "self_seconds": total,
        "areas": {
            k: {"seconds": v, "share": v / total, "us_per_message": v / messages * 1e6}
            for k, v in sorted(areas.items(), key=lambda kv: -kv[1])
        },
        "top_tottime": text.getvalue(),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on (the load average says how free the cores were)."""
    import platform

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--turns", type=int, default=117, help="turns per session (6 events)")
    parser.add_argument("--samples", type=int, default=60, help="latency samples")
    parser.add_argument("--poll", type=float, default=0.2, help="daemon poll interval (s)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="processes for the --jobs run (default: the number of CPUs)",
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT / "worker_bench.json")
    parser.add_argument(
        "--idle",
        type=int,
        nargs="*",
        default=[],
        metavar="SESSIONS",
        help="also run benchmarks/idle_bench.py for these session counts",
    )
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--idle-warmup", type=float, default=20.0)
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="SESSIONS",
        help="also cProfile a one-process chat run of SESSIONS sessions",
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="worker-bench-"))
    try:
        jobs = args.jobs or os.cpu_count() or 1
        result: dict[str, Any] = {"machine": machine()}
        workloads = {
            "chat": lambda home: generate(home, args.sessions, args.turns),
            "tools": lambda home: generate_tool_turns(home, args.sessions, args.turns * 6),
        }
        for name, build in workloads.items():
            started = time.perf_counter()
            build(root / name / "dsh")
            print(
                f"[{name}] generated {args.sessions} sessions in "
                f"{time.perf_counter() - started:.1f} s"
            )
            bare = bare_rate(root / name / "dsh")
            print(
                f"[{name}] bare decode+parse: {bare['events']} events, {bare['messages']} "
                f"messages in {bare['seconds']:.2f} s = {bare['messages_per_s']:.0f} messages/s"
            )
            e2e = embedded_rate(root / name)
            e2e_rate = bare["messages"] / e2e["seconds"]
            ratio = e2e_rate / bare["messages_per_s"]
            print(
                f"[{name}] end to end (embedded, hypatia-lite): {e2e['written']} entries + "
                f"{e2e['edges']} edges in {e2e['seconds']:.2f} s (scan with each session's jobs "
                f"{e2e['scan_with_jobs_seconds']:.2f} s, then draining "
                f"{e2e['drain_seconds']:.2f} s) = {e2e_rate:.0f} messages/s"
            )
            bulk = bulk_floor(root / name / "lite", root / f"{name}-floor")
            floor_s = bare["seconds"] + bulk["seconds"]
            floor_ratio = floor_s / e2e["seconds"]
            print(
                f"[{name}] bulk load of the same rows ({bulk['entries']} entries, "
                f"{bulk['statements']} statements, {bulk['documents']} full-text documents) "
                f"into a fresh shelf, one transaction: {bulk['seconds']:.2f} s"
            )
            print(
                f"[{name}] floor = decode {bare['seconds']:.2f} s + bulk load "
                f"{bulk['seconds']:.2f} s = {floor_s:.2f} s; end to end {e2e['seconds']:.2f} s"
                f" = {e2e['seconds'] / floor_s:.2f}x the floor"
            )
            print(
                f"[{name}] ratio end to end / floor {floor_ratio:.2f} (goal >= 0.8); "
                f"/ bare decode {ratio:.2f}"
            )
            par = parallel_rate(root / name / "dsh", root / f"{name}-jobs", jobs)
            par_rate = bare["messages"] / par["seconds"]
            par_ratio = par_rate / bare["messages_per_s"]
            speedup = e2e["seconds"] / par["seconds"]
            used = (
                f"{jobs} processes"
                if par["processes"] == jobs
                else f"{par['processes']} of {jobs} processes: fewer cores free"
            )
            print(
                f"[{name}] end to end, run --once --jobs {jobs} ({used} + final pass, "
                f"hypatia-lite): {par['written']} entries + {par['edges']} edges in "
                f"{par['seconds']:.2f} s (from the fork: processes "
                f"{par['children_seconds']:.2f} s, final pass {par['final_pass_seconds']:.2f} s)"
                f" = {par_rate:.0f} messages/s; ratio / bare decode {par_ratio:.2f}, "
                f"/ floor {floor_s / par['seconds']:.2f}"
            )
            print(
                f"[{name}] --jobs {jobs} against one process: {speedup:.2f}x "
                f"(goal: >= 1.0 always, >= 1.6 with 2 free cores)"
            )
            result[name] = {
                "bare": bare,
                "embedded": e2e,
                "embedded_messages_per_s": e2e_rate,
                "ratio": ratio,
                "bulk_load": bulk,
                "floor_seconds": floor_s,
                "floor_ratio": floor_ratio,
                "parallel": par,
                "parallel_messages_per_s": par_rate,
                "parallel_ratio": par_ratio,
                "parallel_floor_ratio": floor_s / par["seconds"],
                "parallel_speedup": speedup,
                "load_average": os.getloadavg(),
            }
        if args.profile:
            prof = profile(root / "profile", args.profile, args.turns)
            print(
                f"profile (chat, {prof['sessions']} sessions, {prof['messages']} messages, "
                f"cProfile, {prof['self_seconds']:.2f} s of self time):"
            )
            for area, row in prof["areas"].items():
                print(
                    f"  {area:52s} {row['seconds']:6.2f} s  {row['share'] * 100:4.1f} %  "
                    f"{row['us_per_message']:6.0f} µs/message"
                )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.with_name("worker_profile.txt").write_text(prof.pop("top_tottime"))
            result["profile"] = prof
        if not args.skip_latency:
            lat = latency(root / "latency", args.samples, args.poll)
            print(
                f"turn/end -> entries via daemon + Celery + Redis (poll {lat['poll_interval_s']}"
                f" s): p50 {lat['p50_s'] * 1000:.0f} ms, p95 {lat['p95_s'] * 1000:.0f} ms, "
                f"max {lat['max_s'] * 1000:.0f} ms over {lat['samples']} turns "
                "(goal p95 < 1 s)"
            )
            result["latency"] = lat
        if args.idle:
            import idle_bench

            result["idle"] = idle_bench.main(
                [
                    "--sessions",
                    *map(str, args.idle),
                    "--seconds",
                    str(args.idle_seconds),
                    "--warmup",
                    str(args.idle_warmup),
                    "--out",
                    str(args.out.with_name("idle_bench.json")),
                ]
            )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--parallel-run"]:
        home_arg, root_arg, jobs_arg = sys.argv[2:5]
        print(json.dumps(_parallel_run(Path(home_arg), Path(root_arg), int(jobs_arg))))
    else:
        main()
