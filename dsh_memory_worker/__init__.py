"""dsh-memory-worker: turns DSH session logs into Hypatia memory.

The distribution installs this one import name. Its packages live in the repository's top-level
folders and are mapped here when built (``setup.py``): ``dsh_memory_worker.worker`` is ``worker/``
(the runtime: settings, state, jobs, Celery tasks, daemon, CLI), ``dsh_memory_worker.memory`` is
``memory/`` (the domain: DSH logs, content policy, consolidation, the Hypatia seam) and
``dsh_memory_worker.migrations`` is ``migrations/`` (the Alembic script directory). The store,
hypatia-lite, is a distribution of its own (import name ``hypatia_lite``).
"""

#: The version of the distribution (pyproject.toml reads it here). This module imports nothing:
#: every part of the package may read it.
__version__ = "0.1.0"
