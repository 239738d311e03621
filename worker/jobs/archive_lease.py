"""One lease per project serialises every rewrite of that project's archives: the cascade that
builds new ones and the repair that regenerates them after a withdrawal. Without it, a cascade
could archive a summary's old text while a repair is rewriting that summary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.lease_keeper import wait_for_lease
from dsh_memory_worker.worker.names import archive_lease_key
from dsh_memory_worker.worker.state.leases import Lease


@contextmanager
def hold_archive_lease(ctx: JobContext, project: str, *, wait_s: float) -> Iterator[None]:
    """Hold ``project``'s archive lease for the block, waiting up to ``wait_s`` for it."""
    runtime = ctx.runtime
    key = archive_lease_key(project)

    def acquire() -> Lease | None:
        with ctx.state() as repos:
            return repos.leases.acquire(key, runtime.owner, runtime.settings.lease_ttl_s)

    lease = wait_for_lease(
        acquire,
        wait_s=wait_s,
        while_waiting=ctx.heartbeat,
        busy=f"the archives of {project!r} are being rewritten by another worker",
    )
    try:
        yield
    finally:
        with ctx.state() as repos:
            repos.leases.release(lease)
