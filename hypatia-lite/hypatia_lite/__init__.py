"""hypatia-lite: a Hypatia-compatible store on SQLite + FTS5 with the same CLI and MCP.

Import ``LiteStore`` from ``hypatia_lite.store`` (kept out of this module so that
``hypatia-lite --version`` starts without loading the store).
"""

__version__ = "0.1.0"
