"""Reader benchmarks on the synthetic log written by ``dsh_generate.py``, measured in one run:

(a) events/s of the full decode (``memory.dsh`` scan) vs a bare ``zstandard`` + ``json.loads``
    loop over the same file (goal ≥ 0.6×);
(b) time to read a 100-event range at the end vs at the start of the log through the checkpoint
    index (goal ≤ 2×);
(c) peak RSS of a process that scans the whole log (goal < 200 MB).

    .venv/bin/python benchmarks/dsh_read_bench.py [PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import zstandard

from dsh_memory_worker.memory.dsh.reader import build_index, iter_log, read_range

DEFAULT_LOG = Path(__file__).resolve().parent / "out" / "synthetic.v4.jsonl.zstd"

_RSS_SCRIPT = """
import resource, sys
from pathlib import Path
from dsh_memory_worker.memory.dsh.reader import iter_log
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
scan, events = iter_log(Path(sys.argv[1]))
count = sum(1 for _ in events)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(count, before, after, len(scan.problems))
"""


def bare_decode(path: Path) -> int:
    """The baseline: zstd across frames, split lines, json.loads each (header excluded)."""
    count = -1
    loads = json.loads
    with open(path, "rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
        pending = b""
        while True:
            block = reader.read(1 << 20)
            if not block:
                break
            lines = (pending + block).split(b"\n")
            pending = lines.pop()
            for line in lines:
                loads(line)
                count += 1
    return count


def our_decode(path: Path) -> int:
    scan, events = iter_log(path)
    count = 0
    for _ in events:
        count += 1
    if scan.problems:
        raise SystemExit(f"unexpected problems: {scan.problems[:3]}")
    return count


def _best(fn: object, repeat: int) -> tuple[float, int]:
    times = []
    result = 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times), result


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description="DSH reader benchmarks")
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    path: Path = args.path
    if not path.exists():
        raise SystemExit(f"{path} does not exist: run benchmarks/dsh_generate.py first")

    bare_s, bare_n = _best(lambda: bare_decode(path), args.repeat)
    ours_s, ours_n = _best(lambda: our_decode(path), args.repeat)
    if bare_n != ours_n:
        raise SystemExit(f"event counts differ: bare {bare_n}, ours {ours_n}")
    ratio_a = (ours_n / ours_s) / (bare_n / bare_s)
    print(f"(a) full decode of {ours_n} events")
    print(f"    bare zstandard + json.loads : {bare_n / bare_s:12,.0f} events/s ({bare_s:.2f} s)")
    print(
        f"    dsh_memory_worker.memory.dsh scan             : {ours_n / ours_s:12,.0f} events/s "
        f"({ours_s:.2f} s)"
    )
    print(f"    ratio ours / bare           : {ratio_a:.2f}x (goal >= 0.6x)")

    started = time.perf_counter()
    index = build_index(path)
    index_s = time.perf_counter() - started
    size = len(json.dumps(index.to_json()))
    print(f"    index rebuild: {len(index)} checkpoints, {size / 1e3:.0f} kB JSON, {index_s:.2f} s")

    def timed_range(start: int) -> float:
        samples = []
        for _ in range(15):
            began = time.perf_counter()
            result = read_range(path, start, start + 100, index)
            samples.append(time.perf_counter() - began)
            if len(result.events) != 100 or result.problems:
                raise SystemExit(f"range read at {start} failed: {result.problems}")
        return statistics.median(samples)

    at_start = timed_range(0)
    at_end = timed_range(ours_n - 100)
    ratio_b = at_end / at_start
    print("(b) 100-event range read through the checkpoint index (median of 15)")
    print(f"    at the start: {at_start * 1e3:.2f} ms   at the end: {at_end * 1e3:.2f} ms")
    print(f"    ratio end / start           : {ratio_b:.2f}x (goal <= 2x)")

    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    count, before, after, problems = (int(v) for v in out.stdout.split())
    peak_mb = after / 1024
    if problems or count != ours_n:
        raise SystemExit(f"the RSS scan read {count} events with {problems} problems")
    print("(c) peak RSS of a process streaming the whole log")
    print(f"    after imports: {before / 1024:.0f} MB   peak: {peak_mb:.0f} MB (goal < 200 MB)")
    return {"ratio_a": ratio_a, "ratio_b": ratio_b, "peak_rss_mb": peak_mb, "events": count}


if __name__ == "__main__":
    main()
