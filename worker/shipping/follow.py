"""A standalone shipping loop: ship the given logs every ``--interval`` seconds until stopped.

The daemon's watcher calls :func:`worker.shipping.shipper.ship_log` from its poll (the
``shipping`` setting, docs/shipping.md, "Wiring"); this entry point ships without a watcher, for
the tests that kill a shipper mid-run and for an operator backfilling a home::

    python -m dsh_memory_worker.worker.shipping.follow STATE_URL SESSION_ID=PATH [...] [--once]
    [--segment-bytes N]
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from dsh_memory_worker.worker.shipping.shipper import SEGMENT_BYTES, ShipReport, ship_log
from dsh_memory_worker.worker.shipping.sql import SqlSegmentStore
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.stop_flag import stop_on


def ship_all(
    store: SqlSegmentStore, logs: list[tuple[str, Path]], segment_bytes: int
) -> list[ShipReport]:
    """One pass: ship every log once."""
    return [ship_log(store, sid, path, segment_bytes=segment_bytes) for sid, path in logs]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m dsh_memory_worker.worker.shipping.follow")
    parser.add_argument("state_url")
    parser.add_argument("logs", nargs="+", metavar="SESSION_ID=PATH")
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--segment-bytes", type=int, default=SEGMENT_BYTES)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logs = [(sid, Path(path)) for sid, _, path in (item.partition("=") for item in args.logs)]
    db = StateDB.open(args.state_url)
    store = SqlSegmentStore(db)
    stop = stop_on(signal.SIGTERM)  # not a threading.Event: see worker.stop_flag
    try:
        while True:
            for report in ship_all(store, logs, args.segment_bytes):
                if report.problem:
                    print(f"{report.session_id}: {report.problem}", file=sys.stderr, flush=True)
            if args.once or stop.wait(args.interval):
                return 0
    finally:
        db.dispose()


if __name__ == "__main__":
    sys.exit(main())
