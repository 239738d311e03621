"""Write a large synthetic V4 session log (zstd, one frame per append batch) for the benchmarks.

.venv/bin/python benchmarks/dsh_generate.py [--events 1000000] [--batch 50] [--out PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dsh_memory_worker.memory.dsh.synthetic import synthetic_rows, write_log

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "synthetic.v4.jsonl.zstd"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50, help="events per zstd frame")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    starts = write_log(args.out, synthetic_rows(args.events), compressed=True, batch=args.batch)
    took = time.perf_counter() - started
    size = args.out.stat().st_size
    print(
        f"wrote {args.events} events in {len(starts) + 1} frames, {size / 1e6:.1f} MB, "
        f"to {args.out} in {took:.1f} s"
    )
    return Path(args.out)


if __name__ == "__main__":
    main()
