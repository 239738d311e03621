"""Console page cost: a session page of a 10,000-message session against a 100-message one, and
the sessions page of a home of 3,000 sessions against one of 30 (issue 26).

Generates the sessions (V4, plain JSONL) in a temporary DSH home, lets the watcher record them
(one scan: the checkpoint index and durable end; nothing is logged, the pages do not need it),
starts ``memory-worker console`` and times GET requests over HTTP, ``--repeat`` times each, after
one warm-up request (the first view of a session surveys its whole log once: printed apart as
"first view"). Prints the medians and the ratios measured in this run.

    .venv/bin/python benchmarks/console_bench.py [--repeat 15] [--messages 100 10000]
        [--sessions 30 3000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "support"))
sys.path.insert(0, str(REPO / "tests" / "console"))

from console_support import http, running_console  # noqa: E402
from worker_dshgen import conversation, embedded_runtime  # noqa: E402


def _scan(root: Path) -> None:
    from dsh_memory_worker.worker.watch.watcher import Watcher

    runtime = embedded_runtime(root)
    try:
        Watcher(runtime, lambda *args: None).poll_once()
    finally:
        runtime.close()


def _env(root: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        {
            "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
            "MEMORY_WORKER_DATA_DIR": str(root / "data"),
            "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
        }
    )
    return env


def _time(url: str, cookie: str, repeat: int) -> tuple[float, float]:
    """Milliseconds of the first request and the median of ``repeat`` more."""

    def once() -> float:
        start = time.perf_counter()
        status, _ = http(url, headers={"Cookie": cookie})
        assert status == 200, (status, url)
        return (time.perf_counter() - start) * 1000

    first = once()
    return first, statistics.median(once() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--messages",
        type=int,
        nargs=2,
        default=[100, 10_000],
        metavar=("SMALL", "LARGE"),
        help="messages of the two sessions",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        nargs=2,
        default=[30, 3000],
        metavar=("SMALL", "LARGE"),
        help="sessions of the two homes",
    )
    args = parser.parse_args()
    small_n, large_n = args.messages
    middle = large_n // 100 // 2  # a page in the middle of the large session
    pages = {
        "small": (f"session page, {small_n} messages", "/session?id=s-small&page=0"),
        "large": (
            f"session page {middle + 1} of {-(-large_n // 100)}, {large_n} messages",
            f"/session?id=s-large&page={middle}",
        ),
    }
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pages"
        conversation(root / "dsh", "s-small", "/home/dev/bench", small_n // 2)
        conversation(root / "dsh", "s-large", "/home/dev/bench", large_n // 2)
        _scan(root)
        homes = {}
        for count in args.sessions:
            home = Path(tmp) / f"home-{count}"
            for i in range(count):
                conversation(home / "dsh", f"s-{i:05d}", f"/home/dev/p{i % 7}", 1)
            _scan(home)
            homes[count] = home
        with running_console(_env(root)) as console:
            port = console.base.rsplit(":", 1)[1]
            cookie = f"memory_console_{port}={console.token}"
            for name, url in pages.values():
                first, warm = _time(console.base + url, cookie, args.repeat)
                results[f"{name}: first view ms"] = round(first, 1)
                results[f"{name}: ms"] = round(warm, 1)
        for count, home in homes.items():
            with running_console(_env(home)) as console:
                port = console.base.rsplit(":", 1)[1]
                cookie = f"memory_console_{port}={console.token}"
                _, warm = _time(console.base + "/sessions", cookie, args.repeat)
                cursor = "2999-01-01T00:00:00%2B00:00%7Cz"
                _, later = _time(console.base + "/sessions?after=" + cursor, cookie, args.repeat)
                results[f"sessions page, {count} sessions: ms"] = round(warm, 1)
                results[f"sessions page (cursor), {count} sessions: ms"] = round(later, 1)
    small, large = pages["small"][0], pages["large"][0]
    results[f"ratio session page {large_n} / {small_n} messages"] = round(
        results[f"{large}: ms"] / results[f"{small}: ms"], 2
    )
    results[f"ratio session page {large_n} / {small_n} messages, first view"] = round(
        results[f"{large}: first view ms"] / results[f"{small}: first view ms"], 2
    )
    few, many = args.sessions
    results[f"ratio sessions page {many} / {few} sessions"] = round(
        results[f"sessions page, {many} sessions: ms"]
        / results[f"sessions page, {few} sessions: ms"],
        2,
    )
    for key, value in results.items():
        print(f"{key}: {value}")
    out = REPO / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "console_bench.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
