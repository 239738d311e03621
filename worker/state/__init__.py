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
    from worker.names import session_lease_key
    from worker.state.audit import AuditEntry, AuditRepo, Retraction
    from worker.state.database import Repos, StateDB
    from worker.state.db import make_engine
    from worker.state.failures import Failure, FailureRepo
    from worker.state.leases import Lease, LeaseRepo
    from worker.state.model_calls import ModelCall, ModelCallRepo
    from worker.state.progress import Progress, ProgressRepo
    from worker.state.sessions import Checkpoint, SessionRepo, SessionState

#: Each exported name → the module it lives in.
_HOMES = {
    "session_lease_key": "worker.names",
    "AuditEntry": "worker.state.audit",
    "AuditRepo": "worker.state.audit",
    "Retraction": "worker.state.audit",
    "Repos": "worker.state.database",
    "StateDB": "worker.state.database",
    "make_engine": "worker.state.db",
    "Failure": "worker.state.failures",
    "FailureRepo": "worker.state.failures",
    "Lease": "worker.state.leases",
    "LeaseRepo": "worker.state.leases",
    "ModelCall": "worker.state.model_calls",
    "ModelCallRepo": "worker.state.model_calls",
    "Progress": "worker.state.progress",
    "ProgressRepo": "worker.state.progress",
    "Checkpoint": "worker.state.sessions",
    "SessionRepo": "worker.state.sessions",
    "SessionState": "worker.state.sessions",
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
