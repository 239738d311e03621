"""How the state database names a store entry: by a stable id that holds no model-made words.

Most entry names are the worker's own (``msg-<sid>-<n>``, ``sum-<sid>-<from>-<to>``,
``sum<L>-<digest>``, ``session-<sid>``): a session id, numbers and digests. A work unit's name is
``wu-<slug>-<digest8>``, and its slug comes from the model's title, which can quote a message the
user later withdraws or forgets. The state database outlives the unit (the audit trail, the
provenance of derived entries), so it keeps ``wu-*-<digest8>-<hash8>`` instead: the unit's own
content digest (what an operator finds it by in the store) and the first 8 hex digits of the
SHA-256 of its full name (so two units whose digests collide stay apart). Nothing of the slug is
kept, so retracting or forgetting a unit leaves nothing of its title behind in these columns.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

#: the stable ids' prefix; no work unit name starts with it (a slug holds no ``*``)
UNIT_ID_PREFIX: Final = "wu-*-"
_UNIT_NAME: Final = re.compile(r"wu-(?!\*-).*-([0-9a-f]{8})", re.DOTALL)


def stable_id(name: str) -> str:
    """``name`` as the state database keeps it (see the module docstring)."""
    found = _UNIT_NAME.fullmatch(name)
    if found is None:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{UNIT_ID_PREFIX}{found.group(1)}-{digest}"
