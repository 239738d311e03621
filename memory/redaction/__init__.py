"""Secret redaction: the one function every stored or model-bound text goes through.

Rules are this project's own data (``data/providers.toml``: provider token shapes;
``data/local.toml``: URL credentials, key/value credentials, headers, PEM blocks, JWTs;
``data/config_files.toml``: Docker ``config.json`` auths, kubeconfig ``client-key-data``,
``.netrc`` passwords), read by
:mod:`memory.redaction.rules`; :mod:`memory.redaction.engine` applies them.
"""

from dsh_memory_worker.memory.redaction.engine import (
    EXTRA_PLACEHOLDER,
    MARKER_PREFIX,
    Finding,
    find_secrets,
    redact,
    set_extra_redactions,
)

__all__ = [
    "EXTRA_PLACEHOLDER",
    "MARKER_PREFIX",
    "Finding",
    "find_secrets",
    "redact",
    "set_extra_redactions",
]
