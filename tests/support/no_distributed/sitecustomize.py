"""The base install, simulated: a process whose PYTHONPATH starts with this directory cannot
import ``celery``, ``kombu`` or ``psycopg`` (nor anything under them), as after ``pip install .``
without the ``distributed`` extra. Test-only; never installed, never imported by the worker.

Each blocked name is ``None`` in :data:`sys.modules`: ``import celery`` then raises
``ModuleNotFoundError`` (as in the base install) and :func:`importlib.util.find_spec` answers
``None`` (as for a distribution that is not installed). Child processes inherit PYTHONPATH, so
``run --once``'s children are blocked too.

A process forked from a pre-imported parent (``tests/support/cli_fork.py``, ``site_dir=``) runs
this after the parent's imports: had the parent imported one of these packages, its modules
(and references to them) would outlive the block, so that is refused here, loudly.
"""

from __future__ import annotations

import sys

BLOCKED = ("celery", "kombu", "psycopg", "psycopg_binary", "psycopg_c", "psycopg_pool")

_loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
if _loaded:
    raise RuntimeError(f"no_distributed: already imported before the block: {', '.join(_loaded)}")
for _name in BLOCKED:
    sys.modules[_name] = None  # type: ignore[assignment]
