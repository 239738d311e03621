"""SQLAlchemy models and repositories: sessions, progress (watermarks), leases, audit.

Typical use::

    state = StateDB.open(settings.effective_state_url)      # migrates to head
    with state.transaction() as repos:
        lease = repos.leases.acquire(session_lease_key(sid), owner, settings.lease_ttl_s)

The names below load with their module on first use, so a module of this package that needs no
SQL (the schema template, the revision files) imports without SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_memory_worker.worker.names import session_lease_key
    from dsh_memory_worker.worker.state.audit import AuditEntry, AuditRepo, Retraction
    from dsh_memory_worker.worker.state.database import Repos, StateDB
    from dsh_memory_worker.worker.state.db import make_engine
    from dsh_memory_worker.worker.state.failures import Failure, FailureRepo
    from dsh_memory_worker.worker.state.leases import Lease, LeaseRepo
    from dsh_memory_worker.worker.state.model_calls import ModelCall, ModelCallRepo
    from dsh_memory_worker.worker.state.progress import Progress, ProgressRepo
    from dsh_memory_worker.worker.state.sessions import Checkpoint, SessionRepo, SessionState

#: Each exported name → the module it lives in.
_HOMES = {
    "session_lease_key": "dsh_memory_worker.worker.names",
    "AuditEntry": "dsh_memory_worker.worker.state.audit",
    "AuditRepo": "dsh_memory_worker.worker.state.audit",
    "Retraction": "dsh_memory_worker.worker.state.audit",
    "Repos": "dsh_memory_worker.worker.state.database",
    "StateDB": "dsh_memory_worker.worker.state.database",
    "make_engine": "dsh_memory_worker.worker.state.db",
    "Failure": "dsh_memory_worker.worker.state.failures",
    "FailureRepo": "dsh_memory_worker.worker.state.failures",
    "Lease": "dsh_memory_worker.worker.state.leases",
    "LeaseRepo": "dsh_memory_worker.worker.state.leases",
    "ModelCall": "dsh_memory_worker.worker.state.model_calls",
    "ModelCallRepo": "dsh_memory_worker.worker.state.model_calls",
    "Progress": "dsh_memory_worker.worker.state.progress",
    "ProgressRepo": "dsh_memory_worker.worker.state.progress",
    "Checkpoint": "dsh_memory_worker.worker.state.sessions",
    "SessionRepo": "dsh_memory_worker.worker.state.sessions",
    "SessionState": "dsh_memory_worker.worker.state.sessions",
}

__all__ = [
    "AuditEntry",
    "AuditRepo",
    "Checkpoint",
    "Failure",
    "FailureRepo",
    "Lease",
    "LeaseRepo",
    "ModelCall",
    "ModelCallRepo",
    "Progress",
    "ProgressRepo",
    "Repos",
    "Retraction",
    "SessionRepo",
    "SessionState",
    "StateDB",
    "make_engine",
    "session_lease_key",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:  # also how `from worker.state import <submodule>` finds a submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
