"""Long-term memory in Qdrant (worker side): stores, embedders and the manager.

- Storage behind ``MemoryStore``: Qdrant Edge in-process (``EdgeStore``, the embedded
  default under ``.smyth/memory``) or a Qdrant server (``QdrantServerStore``,
  selected by ``QDRANT_URL``).
- Embeddings behind ``Embedder``: ``HashEmbedder`` (offline, lexical) or
  ``OpenAIEmbedder``.
- ``MemoryManager`` does the operations on a worker; agents reach it through the
  memory activities (``smyth_temporal.activities``), with the tenant injected from
  their input.

Workflow code never imports this package. Its modules load on first use, so that
naming one store does not load the other's client library.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smyth_temporal.memory._defaults import default_embedder, default_memory, default_store
    from smyth_temporal.memory._edge import EdgeStore
    from smyth_temporal.memory._embed import Embedder, HashEmbedder, OpenAIEmbedder
    from smyth_temporal.memory._manager import MemoryManager
    from smyth_temporal.memory._qdrant import QdrantServerStore
    from smyth_temporal.memory._store import MemoryStore

__all__ = [
    "EdgeStore",
    "Embedder",
    "HashEmbedder",
    "MemoryManager",
    "MemoryStore",
    "OpenAIEmbedder",
    "QdrantServerStore",
    "default_embedder",
    "default_memory",
    "default_store",
]

_MODULES = {
    "EdgeStore": "_edge",
    "Embedder": "_embed",
    "HashEmbedder": "_embed",
    "MemoryManager": "_manager",
    "MemoryStore": "_store",
    "OpenAIEmbedder": "_embed",
    "QdrantServerStore": "_qdrant",
    "default_embedder": "_defaults",
    "default_memory": "_defaults",
    "default_store": "_defaults",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'smyth_temporal.memory' has no attribute {name!r}")
    return getattr(importlib.import_module(f"smyth_temporal.memory.{module}"), name)
