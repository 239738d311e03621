"""Embedders for ``similar``: a local lexical hashing embedder and an OpenAI-compatible client.

``HashingEmbedder`` needs no download and is deterministic across processes: lower-cased word
unigrams plus character 3-grams of each word (with boundary marks) are feature-hashed (CRC-32,
signed) into 384 dimensions, log-scaled and L2-normalised. Its similarity is **lexical**: texts
sharing words or word fragments come out close; synonyms and paraphrases do not. It is a
placeholder that keeps ``similar`` working offline, not a semantic model.

``OpenAIEmbedder`` calls ``POST <base>/embeddings`` (``/v1/embeddings``) of any
OpenAI-compatible server with ``httpx``.
"""

from __future__ import annotations

import math
import os
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hypatia_lite.protocol import ModelUnavailableError, StoreError

#: "semantic" (the default when the ``semantic`` extra is installed) | "hash" (the default
#: otherwise) | "openai" | "none"
EMBEDDER_ENV = "HYPATIA_LITE_EMBEDDER"
URL_ENV = "HYPATIA_LITE_EMBED_URL"  # e.g. http://127.0.0.1:8080/v1
MODEL_ENV = "HYPATIA_LITE_EMBED_MODEL"
KEY_ENV_ENV = "HYPATIA_LITE_EMBED_KEY_ENV"  # name of the env var holding the API key

MAX_EMBED_CHARS = 32_768  # longer texts are embedded from their first 32 KiB characters
_WORD = re.compile(r"\w+", re.UNICODE)


class EmbeddingError(StoreError):
    """The embedding provider failed (the write still succeeds; the entry stays unembedded)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors; ``identity`` names the model so vectors are never mixed."""

    identity: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def _normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return vec if norm == 0 else [x / norm for x in vec]


class HashingEmbedder:
    """Deterministic lexical embedding: hashed word unigrams + character 3-grams."""

    #: lexical itself, it adds little to the words of ``similar`` (:mod:`hypatia_lite.fusion`)
    fusion_weight = 0.05

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.identity = f"hypatia-lite/hash-ngram-{dimensions}"

    def _one(self, text: str) -> list[float]:
        counts: dict[int, float] = {}
        dims = self.dimensions
        for word in _WORD.findall(text[:MAX_EMBED_CHARS].lower()):
            features = [f"w:{word}"]
            padded = f"<{word}>"
            features.extend(f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2))
            for feature in features:
                h = zlib.crc32(feature.encode("utf-8"))
                sign = 1.0 if (h >> 31) & 1 else -1.0
                weight = 1.0 if feature[0] == "w" else 0.5
                slot = h % dims
                counts[slot] = counts.get(slot, 0.0) + sign * weight
        vec = [0.0] * dims
        for slot, value in counts.items():
            vec[slot] = math.copysign(math.log1p(abs(value)), value)
        return _normalise(vec)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]


class OpenAIEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint (vectors are L2-normalised here)."""

    fusion_weight = 0.25

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout: float = 10.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.identity = f"openai:{self.base_url}:{model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import httpx2 as httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = self.base_url + "/embeddings"
        body = {"model": self.model, "input": [t[:MAX_EMBED_CHARS] for t in texts]}
        try:
            resp = httpx.post(url, json=body, headers=headers, timeout=self.timeout)
            resp.raise_for_status()
            payload: Any = resp.json()
            items = sorted(payload["data"], key=lambda d: int(d.get("index", 0)))
            vectors = [_normalise([float(x) for x in item["embedding"]]) for item in items]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:
            raise EmbeddingError(f"embedding error: {url}: {err}") from err
        if len(vectors) != len(texts):
            raise EmbeddingError(
                f"embedding error: {url} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors


def embedder_from_env(env: dict[str, str] | None = None) -> Embedder | None:
    """The embedder the environment selects: OpenAI when a URL is set, else the ``semantic``
    extra's when it is installed, else the hashing embedder."""
    values = dict(os.environ) if env is None else env
    kind = values.get(EMBEDDER_ENV, "").strip().lower()
    url = values.get(URL_ENV, "").strip()
    if kind == "none":
        return None
    if kind == "openai" or (url and kind in ("", "openai")):
        if not url:
            raise ModelUnavailableError(f"model unavailable: {EMBEDDER_ENV}=openai needs {URL_ENV}")
        key_env = values.get(KEY_ENV_ENV, "OPENAI_API_KEY")
        model = values.get(MODEL_ENV, "").strip() or "text-embedding-3-small"
        return OpenAIEmbedder(url, model, values.get(key_env) or None)
    if kind in ("", "semantic"):
        from hypatia_lite import semantic

        if semantic.available():
            return semantic.WordLlamaEmbedder()
        if kind == "semantic":
            raise ModelUnavailableError(
                f"model unavailable: {EMBEDDER_ENV}=semantic needs"
                " `pip install 'hypatia-lite[semantic]'`"
            )
    if kind in ("", "hash"):
        return HashingEmbedder()
    raise ModelUnavailableError(
        f"model unavailable: unknown {EMBEDDER_ENV} '{kind}' (use semantic, hash, openai or none)"
    )


def embed_text(tags: Sequence[str], key: str, data: str) -> str:
    """Hypatia's embedding text: tags joined with ', ' (when any), newline, key, newline, data."""
    prefix = ", ".join(tags) + "\n" if tags else ""
    return f"{prefix}{key}\n{data}"


def pack(vec: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vec)}f", *vec)
