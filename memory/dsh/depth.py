"""The nesting bound of one JSON line, checked before it is decoded.

Python's ``json`` decoder recurses once per nesting level and raises ``RecursionError`` (not a
``ValueError``) past the interpreter's recursion limit; a row that decodes just under it can
still overflow the stack of any code that walks it later. No DSH row comes near
:data:`MAX_JSON_DEPTH` (its deepest, a tool's JSON schema inside a request header, is a few
dozen levels), so a deeper line is damage, refused without decoding.

The check is cheap for ordinary lines: it counts ``[`` and ``{`` bytes first (C speed) and looks
closer only when there are more than the bound — then it drops the JSON strings (where brackets do
not nest) and follows the depth over the remaining brackets.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Final

#: The deepest nesting a line may have (objects and arrays), far above any DSH row.
MAX_JSON_DEPTH: Final = 256
_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_STEP: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def too_deep(line: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text ``line`` nests objects and arrays more than ``limit`` levels deep
    (brackets inside strings do not count; an unbalanced line counts as far as it goes)."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", line).translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return False
    return max(accumulate(_STEP[b] for b in brackets)) > limit


def depth_problem(limit: int = MAX_JSON_DEPTH) -> str:
    """What a line over the bound is called in a problem."""
    return f"a line nested more than {limit} levels deep"
