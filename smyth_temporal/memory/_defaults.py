"""The memory a worker gets when nothing else is said."""

from __future__ import annotations

import os

from pydantic import SecretStr

from smyth_temporal.memory._embed import Embedder, HashEmbedder, OpenAIEmbedder
from smyth_temporal.memory._manager import MemoryManager
from smyth_temporal.memory._store import MemoryStore
from smyth_temporal.security import KeyRing
from smyth_temporal.settings import (
    DEFAULT_MEMORY_PATH,
    EncryptionSettings,
    MemorySettings,
    ModelSettings,
)

__all__ = ["DEFAULT_MEMORY_PATH", "default_embedder", "default_memory", "default_store"]


def default_store(
    environment: str | None = None, *, settings: MemorySettings | None = None
) -> MemoryStore:
    """A Qdrant server when ``QDRANT_URL`` is set, else Qdrant Edge under ``.smyth/memory``.

    With an environment (``SMYTH_ENV``), Qdrant Edge lives in ``<path>/<env>``; on a
    server, ``default_memory`` names the collections after the environment.

    Changed in 0.9.0: ``settings`` (default: ``MemorySettings.load()``).
    """
    settings = settings if settings is not None else MemorySettings.load()
    if settings.qdrant_url:
        from smyth_temporal.memory._qdrant import QdrantServerStore

        return QdrantServerStore.from_settings(settings)
    from smyth_temporal.memory._edge import EdgeStore

    path = settings.memory_path
    return EdgeStore(path / environment if environment else path)


def default_embedder(
    settings: MemorySettings | None = None, *, model: ModelSettings | None = None
) -> Embedder:
    """``SMYTH_EMBEDDER``: ``hash`` (default, offline) or ``openai[:MODEL]``.

    Args:
        settings: Which embedder (default: ``MemorySettings.load()``).
        model: The OpenAI-compatible endpoint (default: ``settings`` if it is one,
            else ``ModelSettings.load()``).

    Raises:
        ConfigurationError: An unknown embedder name.

    Changed in 0.9.0: ``settings``, ``model``.
    """
    settings = settings if settings is not None else MemorySettings.load()
    spec = settings.embedder
    if spec == "hash":
        return HashEmbedder()
    if model is None:
        model = settings if isinstance(settings, ModelSettings) else ModelSettings.load()
    return OpenAIEmbedder(
        spec.partition(":")[2] or "text-embedding-3-small",
        base_url=model.openai_base_url,
        api_key=_secret(model.openai_api_key),
    )


def default_memory(
    environment: str | None = None, *, settings: MemorySettings | None = None
) -> MemoryManager:
    """The default store and embedder, one per process and configuration.

    An embedded store can be opened once per process, so workers of one process that
    all use the default share it.

    Args:
        environment: The environment whose memory this is (default: the settings' one,
            ``SMYTH_ENV``); see ``default_store``.
        settings: The memory's settings (default: from the environment); a worker's
            ``WorkerSettings`` is one.

    Changed in 0.9.0: ``settings``.
    """
    memory = settings if settings is not None else MemorySettings.load()
    keys = settings if isinstance(settings, EncryptionSettings) else EncryptionSettings.load()
    environment = environment if environment is not None else memory.environment
    key = (
        memory.qdrant_url,
        str(memory.memory_path),
        memory.embedder,
        os.getcwd(),
        environment,
        _secret(keys.encryption_keys),
        str(keys.encryption_key_file),
    )
    manager = _SHARED.get(key)
    if manager is None:
        manager = _SHARED[key] = MemoryManager(
            _sealed(default_store(environment, settings=memory), keys),
            default_embedder(memory),
            environment=environment,
        )
    return manager


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _sealed(store: MemoryStore, settings: EncryptionSettings) -> MemoryStore:
    """``store``, encrypting memories at rest when a payload key is configured."""
    if KeyRing.from_settings(settings) is None:
        return store
    # Imported only with a key: cryptography cannot be re-imported inside the sandbox.
    from smyth_temporal.memory._sealed import SealedStore
    from smyth_temporal.security import EncryptionCodec

    codec = EncryptionCodec.from_settings(settings)
    assert codec is not None  # a key is set
    return SealedStore(store, codec)


_SHARED: dict[tuple[str | None, ...], MemoryManager] = {}
