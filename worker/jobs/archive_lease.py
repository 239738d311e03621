"""One lease per project serialises every rewrite of that project's archives: the cascade that
builds new ones and the repair that regenerates them after a withdrawal. Without it, a cascade
could archive a summary's old text while a repair is rewriting that summary."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from worker.jobs.context import JobContext
from worker.jobs.logread import TransientJobError
from worker.names import archive_lease_key


@contextmanager
def hold_archive_lease(ctx: JobContext, project: str, *, wait_s: float) -> Iterator[None]:
    """Hold ``project``'s archive lease for the block, waiting up to ``wait_s`` for it."""
    runtime = ctx.runtime
    key = archive_lease_key(project)
    deadline = time.monotonic() + wait_s
    while True:
        with ctx.state() as repos:
            lease = repos.leases.acquire(key, runtime.owner, runtime.settings.lease_ttl_s)
        if lease is not None:
            break
        if time.monotonic() >= deadline:
            raise TransientJobError(
                f"the archives of {project!r} are being rewritten by another worker"
            )
        ctx.heartbeat()
        time.sleep(0.2)
    try:
        yield
    finally:
        with ctx.state() as repos:
            repos.leases.release(lease)
