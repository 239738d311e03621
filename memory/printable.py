"""Text that is safe to show on one line of a log or a terminal table.

Session ids, directory names, paths and log contents come from disk and may hold anything: a
newline forges a second log line, an ANSI escape recolours or rewrites the terminal, a bidi
override reorders what the reader sees. :func:`printable` is the one function every human-facing
line and table cell goes through (JSON output escapes these characters already).
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, and the Unicode bidi embeddings/overrides/isolates, line and
# paragraph separators; lone surrogates (undecodable bytes of a file name) too.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` (``str()`` of it) with every control, bidi-control and separator character
    written as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``); other text unchanged."""
    value = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, value)
