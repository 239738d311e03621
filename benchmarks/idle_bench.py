"""Idle cost: CPU and memory of a worker following a DSH home where nothing happens.

For each ``--sessions`` N (default 300 and 3,000) the benchmark generates a DSH home of N small,
finished sessions (``--turns`` chat turns each, zstd, last written two days ago), settles it with
``memory-worker run --once`` (so every log is processed and every session idle-closed), then
follows it, one process at a time, with

- ``memory-worker run`` (embedded mode: watcher + in-process runner, SQLite state, hypatia-lite);
- ``memory-worker daemon`` (distributed mode: watcher sending hints to Celery over Redis at
  127.0.0.1:6379 on a throwaway queue; state in a throwaway PostgreSQL database on
  127.0.0.1:5432, or with ``--daemon-state sqlite`` in SQLite, which the daemon accepts too).
  No Celery worker runs: an idle daemon should send no hints, and the number it sent is printed.

Once the command prints ``following …`` (start-up, migrations and the start-up reconcile are
done) and ``--warmup`` seconds more have passed (the first polls), it measures
``--seconds`` seconds: CPU as % of one core from ``/proc/<pid>/stat`` (utime + stime of the
process and its live descendants, plus the time of children it has reaped), and RSS (sum of
``VmRSS`` over the process tree, sampled every 0.5 s: the peak since start and the median of the
measured window). Goals (issue 16): < 0.5 % of a core and < 100 MB RSS at 3,000 sessions.
The worker's own defaults apply (poll interval 1 s, reconcile every 30 s), printed with the
figures. Results go to ``benchmarks/out/idle_bench.json``.

``--rewritten K`` first gives the settled state database the audit trail that a finished
``reconsolidate --replace`` of every session with K summaries leaves behind (requests queued and
settled, one repair intent and its closing entry per summary). The reconcile reads that history
every interval, so this shows how the idle cost grows with history, not only with sessions.

    .venv/bin/python benchmarks/idle_bench.py [--sessions 300 3000] [--seconds 60] [--warmup 20]
        [--modes run daemon] [--rewritten K]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_dshgen import conversation

BIN = Path(sys.executable).parent
OUT = Path(__file__).resolve().parent / "out"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
BROKER_URL = "redis://127.0.0.1:6379/13"


def generate(home: Path, sessions: int, turns: int) -> None:
    """N finished, titled sessions of ``turns`` turns, last written two days ago."""
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    for i in range(sessions):
        conversation(
            home,
            f"idle-{i:05d}",
            f"/home/dev/project-{i % 11}",
            turns,
            compressed=True,
            title=f"Idle session {i}",
            batch_turns=2,
            created_at=two_days_ago + i * 1000,
        )


def seed_rewrite_history(state_url: str, summaries: int) -> int:
    """Write the audit trail a finished ``reconsolidate --replace`` of every session leaves in
    the state database (a rewrite request and a reconsolidation request, each queued then
    settled, and ``summaries`` repair intents, each closed by its summary's entry): what the
    reconcile reads every interval. Returns the number of rows written."""
    from dsh_memory_worker.worker.jobs.reconsolidate import ACTION, QUEUED, REWRITE_ACTION
    from dsh_memory_worker.worker.state import StateDB
    from dsh_memory_worker.worker.state.audit import ACTION_INTENT, ACTION_SUMMARY

    db = StateDB.open(state_url)
    rows = 0
    try:
        with db.transaction() as repos:
            for state in repos.sessions.list():
                sid, audit = state.session_id, repos.audit
                for action in (REWRITE_ACTION, ACTION):
                    audit.record(action, QUEUED, shelf="default", session_id=sid, subject="replace")
                for k in range(summaries):
                    audit.record(
                        ACTION_INTENT,
                        "pending",
                        shelf="default",
                        session_id=sid,
                        subject=f"{sid}-summary-{k}",
                        detail="replace: model changed",
                    )
                    audit.record(
                        ACTION_SUMMARY,
                        "regenerated",
                        shelf="default",
                        session_id=sid,
                        subject=f"{sid}-summary-{k}",
                    )
                for action in (REWRITE_ACTION, ACTION):
                    audit.record(action, "done", shelf="default", session_id=sid, subject="replace")
                rows += 4 + 2 * summaries
    finally:
        db.dispose()
    return rows


# ------------------------------------------------------------------------------------ /proc


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def process_tree(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(tree.get(current, []))
    return out


def cpu_ticks(pids: list[int]) -> int:
    """utime + stime (+ cutime + cstime: reaped children) summed over ``pids``."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def hwm_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ------------------------------------------------------------------------------- the homes


def _env(home: Path, data: Path, lite: Path, state_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(home),
            "MEMORY_WORKER_DATA_DIR": str(data),
            "MEMORY_WORKER_LITE_HOME": str(lite),
            "MEMORY_WORKER_BROKER_URL": BROKER_URL,
            "MEMORY_WORKER_LOG_LEVEL": "WARNING",
        }
    )
    if state_url:
        env["MEMORY_WORKER_STATE_URL"] = state_url
    return env


def settle(env: dict[str, str]) -> float:
    """``memory-worker run --once`` over the home; returns its wall time."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "memory-worker"), "run", "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"run --once failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return time.perf_counter() - started


def follow(
    args: list[str],
    env: dict[str, str],
    warmup: float,
    seconds: float,
    sample_s: float = 0.5,
    ready_timeout_s: float = 600.0,
) -> dict[str, Any]:
    """Start ``memory-worker ARGS``, wait until it prints ``following …`` (its loop has
    started) and ``warmup`` s more, measure ``seconds`` s, stop it with SIGTERM."""
    proc = subprocess.Popen(
        [str(BIN / "memory-worker"), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def _read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("following "):
                ready.set()

    reader = threading.Thread(target=_read, daemon=True)
    reader.start()
    samples: list[int] = []
    peak = 0
    try:
        started = time.monotonic()
        ready_at: float | None = None
        while ready_at is None or time.monotonic() - ready_at < warmup:
            if proc.poll() is not None:
                raise SystemExit(
                    f"memory-worker {' '.join(args)} exited during warm-up: "
                    + "\n".join(lines[-20:])
                )
            if ready_at is None and ready.is_set():
                ready_at = time.monotonic()
            if ready_at is None and time.monotonic() - started > ready_timeout_s:
                raise SystemExit(f"memory-worker {' '.join(args)} did not start following")
            peak = max(peak, rss_bytes(process_tree(proc.pid)))
            time.sleep(min(sample_s, 0.1) if ready_at is None else sample_s)
        start_s = ready_at - started
        warmup_ticks = cpu_ticks(process_tree(proc.pid))
        t0, ticks0 = time.monotonic(), warmup_ticks
        while time.monotonic() - t0 < seconds:
            time.sleep(sample_s)
            rss = rss_bytes(process_tree(proc.pid))
            samples.append(rss)
            peak = max(peak, rss)
        pids = process_tree(proc.pid)
        ticks1, wall = cpu_ticks(pids), time.monotonic() - t0
        if proc.poll() is not None:
            raise SystemExit(f"memory-worker {' '.join(args)} exited while measured")
        hwm = hwm_bytes(proc.pid)
        processes = len(pids)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
    text = "\n".join(lines)
    hints = re.search(r"(\d+) hints sent, (\d+) dropped", text)
    written = re.search(r"stopped; (\d+) entries written", text)
    cpu_s = (ticks1 - ticks0) / TICK
    return {
        "command": " ".join(args),
        "start_s": start_s,
        "warmup_s": warmup,
        "seconds": wall,
        "start_and_warmup_cpu_s": warmup_ticks / TICK,
        "cpu_s": cpu_s,
        "cpu_percent_of_core": cpu_s / wall * 100,
        "rss_peak_mb": max(peak, hwm) / 2**20,
        "rss_steady_mb": statistics.median(samples) / 2**20,
        "rss_last_mb": samples[-1] / 2**20,
        "processes": processes,
        "hints_sent": int(hints.group(1)) if hints else None,
        "hints_dropped": int(hints.group(2)) if hints else None,
        "entries_written": int(written.group(1)) if written else None,
        "stderr_tail": lines[-5:],
    }


def poll_costs(root: Path, polls: int = 5, reconciles: int = 2) -> dict[str, Any]:
    """In this process, on the settled embedded home: CPU time of one watcher poll (and of its
    session discovery alone) and of one reconcile, after a first poll that fills the watcher's
    unchanged-file cache, as the follower's loop has after its first second. The CPU % these
    predict at the default intervals (the loop sleeps ``poll_interval_s`` after each poll) is
    printed beside the measured one."""
    from worker_dshgen import embedded_runtime

    from dsh_memory_worker.worker.watch.watcher import Watcher

    runtime = embedded_runtime(
        root, dsh_home=root / "dsh", data_dir=root / "run-data", lite_home=root / "run-lite"
    )
    hints: list[tuple[str, str, str]] = []
    try:
        watcher = Watcher(runtime, lambda job, sid, shelf: hints.append((job, sid, shelf)))
        t = time.process_time()
        watcher.poll_once()
        first = time.process_time() - t
        t = time.process_time()
        for _ in range(polls):
            watcher.discover()
        discover = (time.process_time() - t) / polls
        t = time.process_time()
        for _ in range(polls):
            watcher.poll_once()
        poll = (time.process_time() - t) / polls
        t = time.process_time()
        for _ in range(reconciles):
            watcher.reconcile()
        reconcile = (time.process_time() - t) / reconciles
    finally:
        runtime.close()
    settings = runtime.settings
    return {
        "first_poll_cpu_s": first,
        "poll_cpu_s": poll,
        "discover_cpu_s": discover,
        "reconcile_cpu_s": reconcile,
        "hints": len(hints),
        # the loop waits poll_interval_s after each poll: one cycle is poll + interval
        "predicted_cpu_percent": (
            poll / (poll + settings.poll_interval_s) + reconcile / settings.reconcile_interval_s
        )
        * 100,
    }


def _drop_queue(queue: str) -> None:
    try:
        import redis
    except ImportError:  # pragma: no cover - the distributed extra brings it
        return
    client = redis.Redis.from_url(BROKER_URL)
    client.delete(queue, f"_kombu.binding.{queue}")


def measure(root: Path, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    home = root / "dsh"
    started = time.perf_counter()
    generate(home, sessions, args.turns)
    generated = time.perf_counter() - started
    size = sum(p.stat().st_size for p in home.rglob("session.v4.jsonl.zstd"))
    print(
        f"[{sessions}] generated {sessions} idle sessions ({size / 2**20:.1f} MB of logs) in "
        f"{generated:.1f} s",
        flush=True,
    )
    result: dict[str, Any] = {
        "sessions": sessions,
        "turns": args.turns,
        "log_bytes": size,
        "rewritten_summaries": args.rewritten,
    }
    if "run" in args.modes:
        env = _env(home, root / "run-data", root / "run-lite", None)
        settled = settle(env)
        print(f"[{sessions}] run --once settled the home in {settled:.1f} s", flush=True)
        _seed(f"sqlite:///{root / 'run-data' / 'state.db'}", sessions, args)
        res = follow(["run"], env, args.warmup, args.seconds)
        res["settle_s"] = settled
        result["run"] = res
        _print(sessions, "run (embedded, SQLite state)", res)
        costs = poll_costs(root)
        result["poll_costs"] = costs
        print(
            f"[{sessions}] in process: one poll {costs['poll_cpu_s'] * 1000:.1f} ms CPU "
            f"(discovery {costs['discover_cpu_s'] * 1000:.1f} ms, first poll "
            f"{costs['first_poll_cpu_s'] * 1000:.0f} ms), one reconcile "
            f"{costs['reconcile_cpu_s'] * 1000:.1f} ms: predicts "
            f"{costs['predicted_cpu_percent']:.2f} % of a core; {costs['hints']} hints",
            flush=True,
        )
    if "daemon" in args.modes:
        database = None
        if args.daemon_state == "postgres":
            import psycopg

            database = f"bench_idle_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{database}"')
            state_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
        else:
            state_url = None
        queue = f"bench-idle-{uuid.uuid4().hex[:8]}"
        env = _env(home, root / "daemon-data", root / "daemon-lite", state_url)
        try:
            settled = settle(env)
            print(
                f"[{sessions}] run --once settled the home ({args.daemon_state} state) in "
                f"{settled:.1f} s",
                flush=True,
            )
            _seed(state_url or f"sqlite:///{root / 'daemon-data' / 'state.db'}", sessions, args)
            res = follow(["daemon", "--queue", queue], env, args.warmup, args.seconds)
        finally:
            _drop_queue(queue)
            if database is not None:
                import psycopg

                with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        res["settle_s"] = settled
        res["state"] = args.daemon_state
        result["daemon"] = res
        _print(sessions, f"daemon ({args.daemon_state} state, Redis, no Celery worker)", res)
    return result


def _seed(state_url: str, sessions: int, args: argparse.Namespace) -> None:
    if args.rewritten:
        rows = seed_rewrite_history(state_url, args.rewritten)
        print(
            f"[{sessions}] seeded the audit trail of a rewrite of every session "
            f"({args.rewritten} summaries each): {rows} rows",
            flush=True,
        )


def _print(sessions: int, label: str, res: dict[str, Any]) -> None:
    hints = "" if res["hints_sent"] is None else f"; {res['hints_sent']} hints sent"
    written = (
        "" if res["entries_written"] is None else f"; {res['entries_written']} entries written"
    )
    print(
        f"[{sessions}] {label}: {res['cpu_percent_of_core']:.2f} % of a core over "
        f"{res['seconds']:.0f} s (goal < 0.5 %); RSS steady {res['rss_steady_mb']:.0f} MB, "
        f"peak {res['rss_peak_mb']:.0f} MB (goal < 100 MB); start-up {res['start_s']:.1f} s, "
        f"start-up + warm-up {res['start_and_warmup_cpu_s']:.1f} CPU s{hints}{written}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[300, 3000])
    parser.add_argument("--turns", type=int, default=3, help="turns per session (6 events)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before measuring")
    parser.add_argument("--modes", nargs="+", choices=("run", "daemon"), default=["run", "daemon"])
    parser.add_argument("--daemon-state", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--rewritten",
        type=int,
        default=0,
        metavar="SUMMARIES",
        help="before following, give the state database the audit trail a "
        "finished `reconsolidate --replace` of every session leaves, with "
        "SUMMARIES summaries each (what the reconcile reads grows with it)",
    )
    parser.add_argument("--out", type=Path, default=OUT / "idle_bench.json")
    args = parser.parse_args(argv)
    from dsh_memory_worker.worker.settings import load_settings

    defaults = load_settings(None)
    result: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "poll_interval_s": defaults.poll_interval_s,
        "reconcile_interval_s": defaults.reconcile_interval_s,
        "runs": [],
    }
    root = Path(tempfile.mkdtemp(prefix="idle-bench-"))
    try:
        for sessions in args.sessions:
            result["runs"].append(measure(root / str(sessions), sessions, args))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["load_average_end"] = os.getloadavg()
    runs = result["runs"]
    if len(runs) > 1:
        small, large = runs[0], runs[-1]
        for mode in args.modes:
            a, b = small[mode], large[mode]
            cpu = (
                f"{b['cpu_percent_of_core'] / a['cpu_percent_of_core']:.1f}x"
                if a["cpu_percent_of_core"] > 0
                else "n/a (no CPU measured at the smaller N)"
            )
            print(
                f"{mode}: {large['sessions']} / {small['sessions']} sessions: CPU "
                f"{b['cpu_percent_of_core']:.2f} % / {a['cpu_percent_of_core']:.2f} % = {cpu}, "
                f"steady RSS {b['rss_steady_mb']:.0f} / {a['rss_steady_mb']:.0f} MB = "
                f"{b['rss_steady_mb'] / a['rss_steady_mb']:.2f}x"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
