"""How ``similar`` ranks: the lexical score and the vector score of each row, added.

For one query, each row that may be returned (written to be embedded, holding a vector of the
current model, passing the filters) gets

    score = lexical + weight * z

* ``lexical``: its any-word BM25 over the best lexical score of the query (1.0 for the best
  document, 0 when it holds none of the query's content words; :mod:`hypatia_lite.lexical`);
* ``z``: its cosine similarity to the query, standardised over the rows ranked (minus their
  mean, over their standard deviation), so the weight means the same for every embedder and
  shelf size;
* ``weight``: the embedder's ``fusion_weight`` — how much its vectors are trusted against the
  words. The hashing embedder is itself lexical and adds little (0.05); the ``semantic`` extra's
  static embedder 0.25; an OpenAI-compatible model 0.25.

Score fusion was chosen over reciprocal-rank fusion on measurements: on the LoCoMo half it was
designed on (conversations 0-4), RRF (k=60) of BM25 and wordllama gave 66.7 % R@10, this sum
71.4 %; RRF with the hashing embedder lowered recall below BM25 alone (57.0 % against 65.1 %),
this sum with its small weight raised it (66.5 %). The weights were fixed there and measured on
the other half afterwards (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The weight of an embedder that names none.
DEFAULT_FUSION_WEIGHT = 0.25


def fusion_weight(embedder: Any) -> float:
    """The embedder's ``fusion_weight`` (``DEFAULT_FUSION_WEIGHT`` when it has none)."""
    value = getattr(embedder, "fusion_weight", DEFAULT_FUSION_WEIGHT)
    return float(value) if isinstance(value, int | float) else DEFAULT_FUSION_WEIGHT


def index_mask(ids: Any, allowed: list[int]) -> Any:
    """Which of ``ids`` may be returned: those in ``allowed``."""
    return np.isin(ids, np.asarray(allowed, dtype=np.int64))


def fuse(
    ids: Any, sims: Any, lexical: dict[int, float], weight: float, limit: int
) -> list[tuple[float, int, float]]:
    """The best ``limit`` rows as ``(score, row id, cosine similarity)``, best first (ties: the
    lower id first). ``ids`` ascend; ``sims`` are their cosine similarities to the query."""
    if limit <= 0 or not len(ids):
        return []
    sims = np.asarray(sims, dtype=np.float64)
    spread = float(sims.std())
    score = weight * (sims - sims.mean()) / spread if spread > 0 else np.zeros(len(sims))
    if lexical:
        rids = np.fromiter(lexical.keys(), dtype=np.int64, count=len(lexical))
        values = np.fromiter(lexical.values(), dtype=np.float64, count=len(lexical))
        pos = np.searchsorted(ids, rids)
        inside = pos < len(ids)
        inside[inside] = ids[pos[inside]] == rids[inside]
        score[pos[inside]] += values[inside]
    take = min(limit, len(ids))
    best = np.argpartition(-score, take - 1)[:take] if take < len(ids) else np.arange(len(ids))
    order = sorted(best.tolist(), key=lambda i: (-score[i], int(ids[i])))
    return [(float(score[i]), int(ids[i]), float(sims[i])) for i in order]
