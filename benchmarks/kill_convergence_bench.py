"""Convergence after kills, Redis against RabbitMQ, measured in one run.

For each broker: ``memory-worker daemon`` + a prefork Celery worker (2 pool processes), state in a
throwaway PostgreSQL database, three sessions of 120 turns growing by 20–80 turns before each kill;
``--kills`` ``kill -9`` at reproducible random points (a random number of entries written since the
previous kill): of the pool process holding a session lease (``--targets pool``), or in turn of a
pool process, the worker's main process and the daemon (``--targets mixed``, as the distributed
fault suite), each restarted. After the last kill every log grows by 10 turns and the clock starts;
it stops when every message entry is in the store and the state database shows no lag and no owed
session node. Printed: seconds to converge per broker and the ratio RabbitMQ / Redis.

The cluster settings are the fault suite's (reconcile 2 s, lease TTL 5 s, retry backoff 0.5 s)
unless ``--defaults`` is given, which keeps the shipped ones (30 s, 300 s, 5 s).

.venv/bin/python benchmarks/kill_convergence_bench.py [--kills 18] [--targets pool|mixed]
    [--defaults] [--seed 7]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests" / "support"), str(REPO / "tests"), str(REPO / "benchmarks")]

from cluster_support import (  # noqa: E402
    grow,
    kill_pool_child,
    reach_kill_point,
    start_prefork,
    throwaway_cluster,
    titled_sessions,
    wait_for,
)
from fault_support import children  # noqa: E402

BROKERS = {"redis": None, "rabbitmq": "amqp://guest:guest@127.0.0.1:5672//"}
REDIS_DB = 12
DEFAULTS = {
    "MEMORY_WORKER_RECONCILE_INTERVAL_S": "30",
    "MEMORY_WORKER_LEASE_TTL_S": "300",
    "MEMORY_WORKER_RETRY_BACKOFF_S": "5",
}


def converge_seconds(
    root: Path, broker: str | None, kills: int, mixed: bool, defaults: bool, seed: int
) -> float:
    """Seconds from the last growth after ``kills`` kills to a settled store."""
    writers = titled_sessions(root / "dsh", "d", 3, 120)
    points = random.Random(seed)
    env = dict(DEFAULTS) if defaults else {}
    if broker is not None:
        env["MEMORY_WORKER_BROKER_URL"] = broker
    strays: list[int] = []
    with throwaway_cluster(root, "bench_kills", REDIS_DB, env) as cluster:
        cluster.start("daemon", "daemon")
        name = "w1"
        worker = start_prefork(cluster, name)
        try:
            for number in range(kills):
                target = ("pool", "worker", "daemon")[number % 3] if mixed else "pool"
                reach_kill_point(cluster, writers, writers, points, number, timeout=600)
                if target == "pool":
                    kill_pool_child(cluster, name, points)
                elif target == "worker":
                    strays += children(worker.pid)
                    worker.kill()
                    worker.wait(timeout=30)
                    name = f"w1-{number}"
                    worker = start_prefork(cluster, name)
                else:
                    daemon = cluster.procs["daemon"]
                    daemon.kill()
                    daemon.wait(timeout=30)
                    cluster.start("daemon", "daemon")
            for writer in writers:
                grow(writer, 10, 99)
            started = time.monotonic()
            expected = {
                f"msg-d-{i}-{n}" for i, w in enumerate(writers) for n in range(2 * w.turn_no)
            }
            wait_for(
                lambda: expected <= cluster.names("msg-") and cluster.settled(len(writers)),
                1800,
                "the cluster to converge",
                every=0.2,
            )
            return time.monotonic() - started
        finally:
            for pid in strays:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=18)
    parser.add_argument("--targets", choices=("pool", "mixed"), default="pool")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="the shipped reconcile interval, lease TTL and backoff",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    seconds: dict[str, float] = {}
    for label, broker in BROKERS.items():
        with tempfile.TemporaryDirectory(prefix=f"kills-{label}-") as tmp:
            seconds[label] = converge_seconds(
                Path(tmp), broker, args.kills, args.targets == "mixed", args.defaults, args.seed
            )
        print(
            f"{label}: {args.kills} kills ({args.targets}), converged "
            f"{seconds[label]:.1f} s after the logs stopped",
            flush=True,
        )
    ratio = seconds["rabbitmq"] / max(seconds["redis"], 0.1)
    print(f"ratio rabbitmq / redis {ratio:.2f} (goal <= 2)")


if __name__ == "__main__":
    main()
