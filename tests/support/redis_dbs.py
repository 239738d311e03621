"""The Redis databases the tests use: one block of numbers starting at ``$MW_TEST_REDIS_DB_BASE``
(default 2, so the block is 2–15 of Redis's 16).

Every module that runs a Celery worker or listens to its events has a database of its own (xdist
runs modules side by side, and a worker's queue or event stream must not see another module's),
named here by its offset in the block. Two checkouts testing against one Redis at the same time
give each its own base (only as far as the server has databases: ``databases`` in redis.conf)::

    MW_TEST_REDIS_DB_BASE=20 .venv/bin/python -m pytest …   # needs databases >= 34

A new module that needs one takes the next free offset below.
"""

from __future__ import annotations

import os

ENV = "MW_TEST_REDIS_DB_BASE"
DEFAULT_BASE = 2

#: Module → its offset in the block (all 14 are taken).
OFFSETS = {
    "e2e_shipping_two_hosts": 0,
    "cluster_bench_smoke": 1,  # benchmarks/cluster_bench.py --redis-db
    "fault_suite_distributed": 2,
    "doc_blocks_run": 3,
    "celery_app_alias": 4,
    "worker_prefork_operations": 5,
    "worker_events": 6,
    "withdrawal_acts_at_once": 7,
    "daemon_reconcile_lost_hints": 8,
    "e2e_consolidation_celery": 9,
    "e2e_distributed": 10,
    "rewrite_celery": 11,
    "tasks_delivery_guarantees": 12,
    "distributed_store_refused": 13,
}


def base() -> int:
    raw = os.environ.get(ENV, "")
    try:
        found = int(raw) if raw else DEFAULT_BASE
    except ValueError:
        raise RuntimeError(
            f"{ENV}={raw!r} is not a number (the first Redis database the tests "
            f"use; default {DEFAULT_BASE})"
        ) from None
    if found < 0:
        raise RuntimeError(f"{ENV}={raw!r}: a Redis database number is 0 or more")
    return found


def redis_db(module: str) -> int:
    """The Redis database of ``module`` (a key of :data:`OFFSETS`)."""
    return base() + OFFSETS[module]
