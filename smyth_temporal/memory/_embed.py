"""Embedders: turn memory texts into vectors (worker side).

- ``HashEmbedder``: the offline default. Deterministic feature hashing of words and
  word pairs; no model, no download. It finds memories that share *words* with the
  query (lexical similarity), not memories that mean the same in other words. Good
  for tests, demos and offline runs; use a real embedding model for semantic recall.
- ``OpenAIEmbedder``: any OpenAI-compatible ``/embeddings`` endpoint through the
  ``openai`` package (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``), retries off.

Collections are keyed by the embedder's ``name`` and ``dimension``, so switching
embedders never mixes vectors from two models in one collection.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import ModelSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["Embedder", "HashEmbedder", "OpenAIEmbedder"]

_WORD = re.compile(r"[\w']+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed dimension.

    Added in 0.1.0.
    """

    @property
    def name(self) -> str:
        """A stable name of the model (part of the collection name)."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        ...


class HashEmbedder:
    """Offline, deterministic embeddings by feature hashing (see the module docstring).

    Added in 0.1.0.
    """

    def __init__(self, dimension: int = 384) -> None:
        if dimension < 8:
            raise ConfigurationError("HashEmbedder needs at least 8 dimensions")
        self._dimension = dimension

    @property
    def name(self) -> str:
        """``hash-v1``: bump the version if the hashing ever changes."""
        return "hash-v1"

    @property
    def dimension(self) -> int:
        """The vector length."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Hash each text's words and word pairs into a signed, normalized vector."""
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        words = [w.lower() for w in _WORD.findall(text)]
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vector = [0.0] * self._dimension
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self._dimension
            # The sign bit spreads collisions around zero instead of piling them up.
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0] = 1.0  # an empty text still needs a unit vector
            return vector
        return [v / norm for v in vector]


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint.

    Added in 0.1.0.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dimension: int = 1536,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        client: AsyncOpenAI | None = None,
    ) -> None:
        """Configure the embedder.

        Args:
            model: The embedding model.
            dimension: The vector length; sent as ``dimensions`` when the model allows it.
            base_url: The endpoint (default ``OPENAI_BASE_URL``).
            api_key: The key (default ``OPENAI_API_KEY``).
            timeout: Seconds per request.
            client: A ready client.

        Raises:
            ConfigurationError: No key given and ``OPENAI_API_KEY`` is unset.
        """
        if client is None:
            from openai import AsyncOpenAI

            endpoint = ModelSettings.load() if not (api_key and base_url) else None
            found = endpoint.openai_api_key if endpoint is not None else None
            key = api_key or (found.get_secret_value() if found is not None else None)
            if not key:
                raise ConfigurationError("OpenAIEmbedder needs OPENAI_API_KEY (or api_key=)")
            client = AsyncOpenAI(
                base_url=base_url or (endpoint.openai_base_url if endpoint else None) or None,
                api_key=key,
                max_retries=0,  # Temporal's retry policy is the only retry loop
                timeout=timeout,
            )
        self._client = client
        self._model = model
        self._dimension = dimension

    @property
    def name(self) -> str:
        """The model name."""
        return self._model

    @property
    def dimension(self) -> int:
        """The vector length."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed through the endpoint; errors leave classified for Temporal's retries.

        Raises:
            temporalio.exceptions.ApplicationError: Classified retryable or not.
        """
        import openai

        from smyth_temporal.models import to_application_error

        if not texts:
            return []
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=list(texts), dimensions=self._dimension
            )
        except openai.OpenAIError as exc:
            raise to_application_error(exc) from exc
        vectors = [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
        if any(len(v) != self._dimension for v in vectors):
            raise to_application_error(
                ValueError(f"embedding model {self._model!r} returned the wrong dimension")
            )
        return vectors
