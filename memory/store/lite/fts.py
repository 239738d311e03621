"""Full-text search helpers: Hypatia's query clean-up and its FTS document columns.

Columns (weights as in Hypatia's ``bm25``): key 10, data 1, tags 5, synonyms 3; tokenizer
``porter unicode61``. Unlike Hypatia, CJK text is not segmented with jieba: a run of CJK
characters is one token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

BM25 = "bm25(docs_fts, 10.0, 1.0, 5.0, 3.0)"
_PUNCT = re.compile(r"[:\"'*^+\-().?!,/\\`{}\[\]~@#%;&|<>]")


def fts_match(query: str) -> str | None:
    """An FTS5 MATCH expression ANDing the words of ``query``; None when no word is left."""
    words = _PUNCT.sub(" ", query).split()
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def _synonym_words(synonyms: Any) -> list[str]:
    if isinstance(synonyms, list):
        return [str(s) for s in synonyms]
    if isinstance(synonyms, Mapping):
        return [str(s) for v in synonyms.values() if isinstance(v, list) for s in v]
    return []


def doc_columns(key: str, content: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """``(fts_key, fts_data, fts_tags, fts_synonyms)`` for one entry."""
    tags = content.get("tags") or []
    return (
        key,
        str(content.get("data") or ""),
        " ".join(str(t) for t in tags),
        " ".join(_synonym_words(content.get("synonyms"))),
    )
