"""``PayloadTranslator``: what the codec server does to payloads, without the HTTP."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    PayloadCodec,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from smyth_temporal.security import EncryptionCodec
from smyth_temporal.storage import with_chunk_codec

__all__ = ["PayloadTranslator"]


class PayloadTranslator:
    """Decodes payloads as a worker would (store references resolved, then decrypted).

    Unlike a worker, it shows an unsealed payload as it is: it only displays.

    Args:
        codec: The encryption codec (``None``: payloads are only resolved).
        storage: The payload store that references in history point to (``None``:
            references are returned as they are).
    """

    def __init__(self, codec: PayloadCodec | None, storage: ExternalStorage | None) -> None:
        if isinstance(codec, EncryptionCodec):
            # Shown, never acted on: history holds unsealed payloads by design (the
            # SDK's patch markers, search attributes) and refused ones worth seeing.
            codec = codec.accepting_plaintext()
        self._codec = codec
        # The store's chunks are sealed one by one with the same codec.
        self._storage = storage if storage is None else with_chunk_codec(storage, codec)

    def _converter(self, namespace: str | None) -> DataConverter:
        codec = self._codec
        if namespace and isinstance(codec, WithSerializationContext):
            # Bound to the namespace the UI or CLI says it reads: a payload sealed for
            # another namespace is refused, as a worker there would refuse it.
            context = WorkflowSerializationContext(namespace=namespace, workflow_id="")
            codec = codec.with_context(context)
        return DataConverter(payload_codec=codec, external_storage=self._storage)

    async def decode(self, payloads: Sequence[Payload], namespace: str | None) -> list[Payload]:
        """Resolve store references, then decrypt.

        Raises:
            PayloadDecryptionError: A payload was altered or its key is missing.
            ConfigurationError: A referenced file is not in this process's store.
        """
        converter = self._converter(namespace)
        # temporalio has no public call for "decode as a worker does, references
        # included" (DataConverter.decode also converts to Python values); these three
        # steps are what its inbound path runs, in its order, kept in this one place.
        resolved = await converter._decode_reference_payload_sequence(payloads)
        resolved = await converter._external_retrieve_payload_sequence(resolved)
        return await converter._decode_payload_sequence(resolved)

    async def encode(self, payloads: Sequence[Payload], namespace: str | None) -> list[Payload]:
        """Encrypt (what the UI sends as a signal's or query's input); never stored."""
        return await self._converter(namespace)._encode_payload_sequence(payloads)
