"""The memory a worker gets when nothing else is said."""

from __future__ import annotations

import os
from pathlib import Path

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory._embed import Embedder, HashEmbedder, OpenAIEmbedder
from smyth_temporal.memory._manager import MemoryManager
from smyth_temporal.memory._store import MemoryStore

__all__ = ["DEFAULT_MEMORY_PATH", "default_embedder", "default_memory", "default_store"]

DEFAULT_MEMORY_PATH = Path(".smyth/memory")
"""Where the embedded Qdrant Edge store lives (``SMYTH_MEMORY_PATH``)."""


def default_store() -> MemoryStore:
    """A Qdrant server when ``QDRANT_URL`` is set, else Qdrant Edge under ``.smyth/memory``."""
    if os.environ.get("QDRANT_URL"):
        from smyth_temporal.memory._qdrant import QdrantServerStore

        return QdrantServerStore.from_env()
    from smyth_temporal.memory._edge import EdgeStore

    return EdgeStore(Path(os.environ.get("SMYTH_MEMORY_PATH") or DEFAULT_MEMORY_PATH))


def default_embedder() -> Embedder:
    """``SMYTH_EMBEDDER``: ``hash`` (default, offline) or ``openai[:MODEL]``.

    Raises:
        ConfigurationError: An unknown embedder name.
    """
    spec = os.environ.get("SMYTH_EMBEDDER", "hash")
    if spec == "hash":
        return HashEmbedder()
    if spec == "openai" or spec.startswith("openai:"):
        model = spec.partition(":")[2] or "text-embedding-3-small"
        return OpenAIEmbedder(model)
    raise ConfigurationError(f"SMYTH_EMBEDDER must be 'hash' or 'openai[:model]', not {spec!r}")


def default_memory() -> MemoryManager:
    """The default store and embedder, one per process and configuration.

    An embedded store can be opened once per process, so workers of one process that
    all use the default share it.
    """
    key = (
        os.environ.get("QDRANT_URL"),
        os.environ.get("SMYTH_MEMORY_PATH"),
        os.environ.get("SMYTH_EMBEDDER"),
        os.getcwd(),
    )
    manager = _SHARED.get(key)
    if manager is None:
        manager = _SHARED[key] = MemoryManager(default_store(), default_embedder())
    return manager


_SHARED: dict[tuple[str | None, ...], MemoryManager] = {}
