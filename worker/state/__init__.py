"""SQLAlchemy models and repositories: sessions, progress (watermarks), leases, audit.

Typical use::

    state = StateDB.open(settings.effective_state_url)      # migrates to head
    with state.transaction() as repos:
        lease = repos.leases.acquire(session_lease_key(sid), owner, settings.lease_ttl_s)
"""

from worker.names import session_lease_key
from worker.state.audit import AuditEntry, AuditRepo, Retraction
from worker.state.database import Repos, StateDB
from worker.state.db import make_engine
from worker.state.failures import Failure, FailureRepo
from worker.state.leases import Lease, LeaseRepo
from worker.state.model_calls import ModelCall, ModelCallRepo
from worker.state.progress import Progress, ProgressRepo
from worker.state.sessions import Checkpoint, SessionRepo, SessionState

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
