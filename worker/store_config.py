"""Which store the settings name for a shelf (:class:`memory.store.factory.StoreConfig`).

One rule for the runtime (:meth:`worker.jobs.runtime.Runtime.store`) and for a first run on an
empty home (:mod:`worker.run.empty_home`), which opens the store without the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_memory_worker.memory.store.breaker import Breaker
    from dsh_memory_worker.memory.store.factory import StoreConfig
    from dsh_memory_worker.worker.settings import Settings


def store_config(settings: Settings, shelf: str, breaker: Breaker | None = None) -> StoreConfig:
    """The store of ``shelf`` (the configured PostgreSQL shelf URL applies to the configured
    shelf only); ``breaker`` counts a ``cli`` / ``mcp`` store's timeouts across reopenings."""
    from dsh_memory_worker.memory.store.factory import StoreConfig

    return StoreConfig(
        transport=settings.store_transport,
        binary=settings.store_binary,
        shelf=shelf,
        timeout_s=settings.store_timeout_s,
        lite_home=settings.lite_home,
        shelf_url=settings.store_shelf_url if shelf == settings.store_shelf else None,
        breaker=breaker,
    )
