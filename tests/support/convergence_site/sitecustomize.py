"""Start-up hook of the convergence fuzzer's ``memory-worker`` runs (never installed, never
imported by the worker itself; ``cli_fork`` runs it with ``site_dir=``).

``MW_CONVERGENCE_CLOCK=FILE``: the process's clock runs ``float(FILE)`` seconds ahead of the
real one (``time.time``, ``time.time_ns``, ``datetime.now`` … through time-machine), so the test
moves time past a back-off, a lease or the at-rest settle delay by writing a number, never by
sleeping. The file lies outside every directory the worker reads: changing it changes no
fingerprint and no setting. Then the crash points of ``tests/support/crash_points`` (a run that
dies as ``kill -9`` would before its N-th store write, ``MEMORY_WORKER_TEST_CRASH_AT=N``).
"""

from __future__ import annotations

import os
import runpy
import time
from pathlib import Path

_CLOCK = os.environ.get("MW_CONVERGENCE_CLOCK", "")
if _CLOCK:
    try:
        _OFFSET = float(Path(_CLOCK).read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        _OFFSET = 0.0
    if _OFFSET:
        import time_machine

        time_machine.travel(time.time() + _OFFSET, tick=True).start()

runpy.run_path(str(Path(__file__).resolve().parent.parent / "crash_points" / "sitecustomize.py"))
