"""Embedded follow latency: ``turn/end`` written → its entries in hypatia-lite, through
``memory-worker run`` (SQLite state, in-process jobs) at the default settings (file-system
notifications, the 1 s poll as fallback), or with ``--no-notifications`` (polling only).

Usage: ``python benchmarks/follow_latency.py [--samples 40] [--no-notifications]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_bench import _store_names, turn_latencies
from worker_dshgen import SessionLogWriter

BIN = Path(sys.executable).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--no-notifications", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="follow-latency-") as tmp:
        root = Path(tmp)
        home, lite = root / "dsh", root / "lite"
        env = {
            **os.environ,
            "MEMORY_WORKER_LITE_HOME": str(lite),
            "MEMORY_WORKER_DSH_HOME": str(home),
            "XDG_DATA_HOME": str(root / "data"),
            "MEMORY_WORKER_LOG_LEVEL": "WARNING",
            "MEMORY_WORKER_WATCH_NOTIFICATIONS": "false" if args.no_notifications else "true",
        }
        logs = [SessionLogWriter(home, f"live-{i}", "/home/dev/live") for i in range(8)]
        for log in logs:
            log.turn("warm up", "ok")
            log.flush()
        proc = subprocess.Popen(
            [str(BIN / "memory-worker"), "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while len(_store_names(lite, "msg-live-")) < 16:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("memory-worker run did not start within 120 s")
                time.sleep(0.05)
            waits = turn_latencies(logs, lite, args.samples, every=0.002)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    waits.sort()
    p95 = waits[max(0, round(0.95 * len(waits)) - 1)]
    mode = "polling only" if args.no_notifications else "notifications"
    print(
        f"turn/end -> entries, memory-worker run ({mode}): {len(waits)} samples, "
        f"p50 {1000 * statistics.median(waits):.0f} ms, p95 {1000 * p95:.0f} ms "
        f"(goal < 50 ms), max {1000 * waits[-1]:.0f} ms"
    )


if __name__ == "__main__":
    main()
