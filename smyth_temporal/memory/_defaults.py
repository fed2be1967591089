"""The memory a worker gets when nothing else is said."""

from __future__ import annotations

import os
from pathlib import Path

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.memory._embed import Embedder, HashEmbedder, OpenAIEmbedder
from smyth_temporal.memory._manager import MemoryManager
from smyth_temporal.memory._store import MemoryStore
from smyth_temporal.security._keys_encryption import KeyRing
from smyth_temporal.settings import current_environment

__all__ = ["DEFAULT_MEMORY_PATH", "default_embedder", "default_memory", "default_store"]

DEFAULT_MEMORY_PATH = Path(".smyth/memory")
"""Where the embedded Qdrant Edge store lives (``SMYTH_MEMORY_PATH``)."""


def default_store(environment: str | None = None) -> MemoryStore:
    """A Qdrant server when ``QDRANT_URL`` is set, else Qdrant Edge under ``.smyth/memory``.

    With an environment (``SMYTH_ENV``), Qdrant Edge lives in ``<path>/<env>``; on a
    server, ``default_memory`` names the collections after the environment.
    """
    if os.environ.get("QDRANT_URL"):
        from smyth_temporal.memory._qdrant import QdrantServerStore

        return QdrantServerStore.from_env()
    from smyth_temporal.memory._edge import EdgeStore

    path = Path(os.environ.get("SMYTH_MEMORY_PATH") or DEFAULT_MEMORY_PATH)
    return EdgeStore(path / environment if environment else path)


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


def default_memory(environment: str | None = None) -> MemoryManager:
    """The default store and embedder, one per process and configuration.

    An embedded store can be opened once per process, so workers of one process that
    all use the default share it.

    Args:
        environment: The environment whose memory this is (default: the current one,
            ``SMYTH_ENV``); see ``default_store``.
    """
    environment = environment if environment is not None else current_environment()
    key = (
        os.environ.get("QDRANT_URL"),
        os.environ.get("SMYTH_MEMORY_PATH"),
        os.environ.get("SMYTH_EMBEDDER"),
        os.getcwd(),
        environment,
        os.environ.get("SMYTH_ENCRYPTION_KEYS"),
        os.environ.get("SMYTH_ENCRYPTION_KEY_FILE"),
    )
    manager = _SHARED.get(key)
    if manager is None:
        manager = _SHARED[key] = MemoryManager(
            _sealed(default_store(environment)), default_embedder(), environment=environment
        )
    return manager


def _sealed(store: MemoryStore) -> MemoryStore:
    """``store``, encrypting memories at rest when a payload key is configured."""
    if KeyRing.from_env() is None:
        return store
    # Imported only with a key: cryptography cannot be re-imported inside the sandbox.
    from smyth_temporal.memory._sealed import SealedStore
    from smyth_temporal.security._encryption import EncryptionCodec

    codec = EncryptionCodec.from_env()
    assert codec is not None  # a key is set
    return SealedStore(store, codec)


_SHARED: dict[tuple[str | None, ...], MemoryManager] = {}
