"""The ``semantic`` extra's embedder: WordLlama's static token embeddings, offline.

``pip install 'hypatia-lite[semantic]'`` brings ``wordllama`` (MIT licence), whose PyPI
wheel carries its default model inside it (``wordllama/weights/l2_supercat_256.safetensors``,
16 MB, 256 dimensions, with its tokenizer config). Those weights were trained by WordLlama's
author from the token-embedding codebooks of LLaMA 2 70B and Phi-3 medium (the package's README),
so they are derived from LLaMA 2 family weights: see docs/stores.md, "Semantic search", for the
licence question. A text's vector is the weighted average of its tokens' vectors: no context,
but synonyms and related words come out close, which the hashing embedder cannot do.

Nothing is ever downloaded: the model is loaded from the installed package's own directory
with ``disable_download=True``; a missing file is a ``ModelUnavailableError``, not a fetch.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypatia_lite.protocol import ModelUnavailableError

CONFIG = "l2_supercat"
DIMENSIONS = 256
MAX_CHARS = 32_768  # as the other embedders: longer texts are embedded from their start


def available() -> bool:
    """True when the ``semantic`` extra (``wordllama``) is installed."""
    return importlib.util.find_spec("wordllama") is not None


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256-d), loaded from the installed wheel on first use."""

    identity = f"wordllama/{CONFIG}-{DIMENSIONS}"
    #: how much ``similar`` trusts these vectors against the words (:mod:`hypatia_lite.fusion`)
    fusion_weight = 0.25

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import wordllama
                    from wordllama import WordLlama
                except ImportError as err:
                    raise ModelUnavailableError(
                        "model unavailable: the semantic embedder needs"
                        " `pip install 'hypatia-lite[semantic]'`"
                    ) from err
                home = Path(wordllama.__file__).parent
                try:
                    self._model = WordLlama.load(
                        config=CONFIG, cache_dir=home, dim=DIMENSIONS, disable_download=True
                    )
                except Exception as err:  # a damaged install: say so, never download
                    raise ModelUnavailableError(
                        f"model unavailable: wordllama's {CONFIG} weights under {home}: {err}"
                    ) from err
            return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().embed([t[:MAX_CHARS] for t in texts], norm=True)
        return [[float(x) for x in row] for row in vectors]
