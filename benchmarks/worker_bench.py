"""Worker benchmarks, measured in one run on a generated DSH home.

1. Throughput: end-to-end messages/s of the embedded pipeline (watcher + in-process runner +
   in-process hypatia-lite, as ``memory-worker run --once`` does it) against the bare
   decode + parse rate of the same logs (goal: ratio ≥ 0.4), on two generated homes of
   ``--sessions`` sessions × ``--turns × 6`` events: chat turns (titled sessions, so a
   ``belongTo`` edge per message) and tool turns (the reader's synthetic generator). Each
   workload is also run as ``memory-worker run --once --jobs N`` does it, with N =
   ``os.cpu_count()`` processes (:class:`worker.run.once_parallel.OnceChildren` +
   :func:`~worker.run.once_parallel.run_once` in a fresh Python process, so the children are forked
   before anything is opened; child start-up and the final pass included), on a fresh state and
   store, against the same bare figure.
2. Latency: ``turn/end`` appended to a followed log → its entries in the store, through
   ``memory-worker daemon`` + a Celery ``memory-worker worker`` + Redis, state in PostgreSQL
   (goal: p95 < 1 s). The daemon's poll interval is part of this latency and is printed.

.venv/bin/python benchmarks/worker_bench.py [--sessions 300] [--turns 117] [--samples 60]
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

from memory.store.lite.sqlitelib import sqlite3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_dshgen import SessionLogWriter, conversation, embedded_runtime

from memory.dsh.reader import read_log
from memory.messages import is_loggable
from memory.store.lite import db, shelves
from worker.run.once_children import OnceChildren
from worker.run.once_parallel import run_once
from worker.run.runner import InProcessRunner
from worker.watch.watcher import Watcher

BIN = Path(sys.executable).parent
OUT = Path(__file__).resolve().parent / "out"


def generate(home: Path, sessions: int, turns: int) -> None:
    """Chat turns: prompt → answer (6 events, 2 messages per turn), every session titled."""
    for i in range(sessions):
        conversation(home, f"bench-{i:04d}", f"/home/dev/project-{i % 7}", turns,
                     compressed=True, title=f"Benchmark session {i}", batch_turns=4)


def generate_tool_turns(home: Path, sessions: int, events: int) -> None:
    """Tool turns from the reader's synthetic generator: prompt → tool call → tool result →
    answer (9 events, 2 messages per turn), untitled."""
    from memory.dsh.synthetic import synthetic_header, synthetic_rows, write_log

    for i in range(sessions):
        sid, cwd = f"tools-{i:04d}", f"/home/dev/project-{i % 7}"
        directory = home / "sessions" / f"--home-dev-project-{i % 7}--" / sid
        directory.mkdir(parents=True, exist_ok=True)
        write_log(directory / "session.v4.jsonl.zstd", synthetic_rows(events), compressed=True,
                  batch=36, header=synthetic_header(sid, cwd))


def bare_rate(home: Path) -> dict[str, float]:
    started = time.perf_counter()
    events = messages = 0
    for path in sorted(home.rglob("session.v4.jsonl.zstd")):
        log = read_log(path)
        events += len(log.events)
        messages += sum(1 for e in log.events if is_loggable(e))
    seconds = time.perf_counter() - started
    return {"events": events, "messages": messages, "seconds": seconds,
            "messages_per_s": messages / seconds, "events_per_s": events / seconds}


def embedded_rate(root: Path) -> dict[str, float]:
    runtime = embedded_runtime(root, force_idle=True)
    runner = InProcessRunner(runtime)
    # As ``run --once``: each session's jobs run right after its scan, on the scan's decode.
    watcher = Watcher(runtime, runner.submit, after_session=lambda _sid: runner.run_ready())
    started = time.perf_counter()
    watcher.poll_once()
    watcher.reconcile()
    scanned = time.perf_counter() - started
    runner.drain()
    seconds = time.perf_counter() - started
    runtime.close()
    stats = runner.stats
    return {"seconds": seconds, "scan_with_jobs_seconds": scanned,
            "drain_seconds": seconds - scanned, "written": stats.written,
            "edges": stats.edges, "failed": stats.failed}


def parallel_rate(home: Path, root: Path, jobs: int) -> dict[str, float]:
    """``run --once --jobs N``'s code path on ``home`` with a fresh state and store under
    ``root``, in a fresh Python process (:func:`_parallel_run`)."""
    embedded_runtime(root, dsh_home=home).close()  # the state database, migrated, untimed
    done = subprocess.run(
        [sys.executable, __file__, "--parallel-run", str(home), str(root), str(jobs)],
        capture_output=True, text=True, timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"--jobs {jobs} run failed: {done.stderr.strip()}")
    measured: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return measured


def _parallel_run(home: Path, root: Path, jobs: int) -> dict[str, float]:
    """In a process that has opened nothing yet, as ``run --once --jobs N``: fork the children,
    open the runtime (migrated already by :func:`parallel_rate`), run. The clock runs from the
    fork to the end of the final pass."""
    from worker.jobs.runtime import build_runtime
    from worker.settings import load_settings

    settings = load_settings(None, dsh_home=home, data_dir=root / "data", lite_home=root / "lite")
    started = time.perf_counter()
    children = OnceChildren(settings, settings.store_shelf, jobs)
    try:
        runtime = build_runtime(settings, owner=f"bench:{root.name}", force_idle=True,
                                migrate=False)
        totals = run_once(runtime, settings.store_shelf, children=children)
    finally:
        children.stop()
    seconds = time.perf_counter() - started
    runtime.close()
    return {"jobs": jobs, "seconds": seconds, "children_seconds": totals.children_seconds,
            "final_pass_seconds": totals.final_seconds, "written": totals.written,
            "edges": totals.edges, "failed": totals.failed}


def _store_names(lite: Path, prefix: str) -> set[str]:
    try:
        path = shelves.resolve(shelves.lite_home(lite), "default") / db.DB_FILE
    except shelves.ShelfError:
        return set()
    if not path.exists():
        return set()
    with sqlite3.connect(path) as conn:
        try:
            return {r[0] for r in conn.execute(
                "SELECT name FROM knowledge WHERE name LIKE ?", (prefix + "%",))}
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
            procs.append(subprocess.Popen(
                [str(BIN / "memory-worker"), *args, "--queue", queue], env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while len(_store_names(lite, "msg-live-")) < 16:
            if time.monotonic() > deadline:
                raise SystemExit("the daemon and worker did not start within 60 s")
            time.sleep(0.05)
        waits: list[float] = []
        for n in range(samples):
            log = logs[n % len(logs)]
            log.turn(f"question {n}", f"answer {n}")
            ordinal = 2 * log.turn_no - 1
            wanted = f"msg-{log.session_id}-{ordinal}"
            log.flush()
            started = time.perf_counter()
            while wanted not in _store_names(lite, wanted):
                if time.perf_counter() - started > 30:
                    raise SystemExit(f"{wanted} did not appear within 30 s")
                time.sleep(0.005)
            waits.append(time.perf_counter() - started)
            time.sleep(0.05)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=15)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    waits.sort()
    return {"samples": len(waits), "poll_interval_s": poll_s,
            "p50_s": statistics.median(waits),
            "p95_s": waits[max(0, round(0.95 * len(waits)) - 1)], "max_s": waits[-1]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--turns", type=int, default=117, help="turns per session (6 events)")
    parser.add_argument("--samples", type=int, default=60, help="latency samples")
    parser.add_argument("--poll", type=float, default=0.2, help="daemon poll interval (s)")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="worker-bench-"))
    try:
        result: dict[str, Any] = {}
        workloads = {
            "chat": lambda home: generate(home, args.sessions, args.turns),
            "tools": lambda home: generate_tool_turns(home, args.sessions, args.turns * 6),
        }
        for name, build in workloads.items():
            started = time.perf_counter()
            build(root / name / "dsh")
            print(f"[{name}] generated {args.sessions} sessions in "
                  f"{time.perf_counter() - started:.1f} s")
            bare = bare_rate(root / name / "dsh")
            print(f"[{name}] bare decode+parse: {bare['events']} events, {bare['messages']} "
                  f"messages in {bare['seconds']:.2f} s = {bare['messages_per_s']:.0f} messages/s")
            e2e = embedded_rate(root / name)
            e2e_rate = bare["messages"] / e2e["seconds"]
            ratio = e2e_rate / bare["messages_per_s"]
            print(f"[{name}] end to end (embedded, hypatia-lite): {e2e['written']} entries + "
                  f"{e2e['edges']} edges in {e2e['seconds']:.2f} s (scan with each session's jobs "
                  f"{e2e['scan_with_jobs_seconds']:.2f} s, then draining "
                  f"{e2e['drain_seconds']:.2f} s) = {e2e_rate:.0f} messages/s; ratio {ratio:.2f} "
                  "(goal >= 0.4)")
            jobs = os.cpu_count() or 1
            par = parallel_rate(root / name / "dsh", root / f"{name}-jobs", jobs)
            par_rate = bare["messages"] / par["seconds"]
            par_ratio = par_rate / bare["messages_per_s"]
            print(f"[{name}] end to end, run --once --jobs {jobs} ({jobs} processes + final pass, "
                  f"hypatia-lite): {par['written']} entries + {par['edges']} edges in "
                  f"{par['seconds']:.2f} s (from the fork: processes "
                  f"{par['children_seconds']:.2f} s, final pass {par['final_pass_seconds']:.2f} s)"
                  f" = {par_rate:.0f} messages/s; ratio {par_ratio:.2f} with N = {jobs} "
                  "(goal >= 0.4)")
            result[name] = {"bare": bare, "embedded": e2e, "embedded_messages_per_s": e2e_rate,
                            "ratio": ratio, "parallel": par,
                            "parallel_messages_per_s": par_rate, "parallel_ratio": par_ratio}
        if not args.skip_latency:
            lat = latency(root / "latency", args.samples, args.poll)
            print(f"turn/end -> entries via daemon + Celery + Redis (poll {lat['poll_interval_s']}"
                  f" s): p50 {lat['p50_s'] * 1000:.0f} ms, p95 {lat['p95_s'] * 1000:.0f} ms, "
                  f"max {lat['max_s'] * 1000:.0f} ms over {lat['samples']} turns "
                  "(goal p95 < 1 s)")
            result["latency"] = lat
        OUT.mkdir(exist_ok=True)
        (OUT / "worker_bench.json").write_text(json.dumps(result, indent=2))
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--parallel-run"]:
        home_arg, root_arg, jobs_arg = sys.argv[2:5]
        print(json.dumps(_parallel_run(Path(home_arg), Path(root_arg), int(jobs_arg))))
    else:
        main()
