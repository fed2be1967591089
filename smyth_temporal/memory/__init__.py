"""Long-term memory in Qdrant: knowledge shared across runs, restarts and weeks.

- Storage behind ``MemoryStore``: Qdrant Edge in-process (``EdgeStore``, the embedded
  default under ``.smyth/memory``) or a Qdrant server (``QdrantServerStore``,
  selected by ``QDRANT_URL``).
- Embeddings behind ``Embedder``: ``HashEmbedder`` (offline, lexical) or
  ``OpenAIEmbedder``.
- ``MemoryManager`` does the operations on a worker; agents reach it through the
  memory activities, with the tenant injected from their input.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal.memory._activities import MemoryActivities
from smyth_temporal.memory._admin import MemoryAdmin
from smyth_temporal.memory._defaults import default_embedder, default_memory, default_store
from smyth_temporal.memory._embed import Embedder, HashEmbedder, OpenAIEmbedder
from smyth_temporal.memory._manager import MemoryManager
from smyth_temporal.memory._store import MemoryStore
from smyth_temporal.types.memory import MemoryHit, MemoryRecord, MemoryScope, Provenance

if TYPE_CHECKING:
    from smyth_temporal.memory._edge import EdgeStore
    from smyth_temporal.memory._qdrant import QdrantServerStore

__all__ = [
    "EdgeStore",
    "Embedder",
    "HashEmbedder",
    "MemoryActivities",
    "MemoryAdmin",
    "MemoryHit",
    "MemoryManager",
    "MemoryRecord",
    "MemoryScope",
    "MemoryStore",
    "OpenAIEmbedder",
    "Provenance",
    "QdrantServerStore",
    "default_embedder",
    "default_memory",
    "default_store",
]


def __getattr__(name: str) -> Any:
    # The backends import their Qdrant packages; load them only when asked for.
    if name == "EdgeStore":
        from smyth_temporal.memory._edge import EdgeStore

        return EdgeStore
    if name == "QdrantServerStore":
        from smyth_temporal.memory._qdrant import QdrantServerStore

        return QdrantServerStore
    raise AttributeError(name)
