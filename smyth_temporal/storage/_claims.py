"""Which store objects a payload refers to, read from the reference format itself.

temporalio replaces a stored payload by a reference payload: an
``ExternalStorageReference`` message (``json/protobuf``, its ``messageType`` naming
it) with the driver's name and claim, or, written by earlier releases, the same as
plain JSON (``json/external-storage-reference``). The file driver's claim is
``{"sha256": <digest>}``. Garbage collection decodes exactly that, instead of looking
for something shaped like a digest in every payload's bytes: a reference is found
wherever a payload can be, including inside payloads that carry protobuf messages
(a ``Payloads`` or a ``Failure`` serialized as a payload), and nothing else counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from google.protobuf import json_format, symbol_database
from google.protobuf.message import DecodeError, Message
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference

from smyth_temporal._payloads import payloads_in
from smyth_temporal.exceptions import ConfigurationError

__all__ = ["EncodedReferenceError", "stored_digests"]

_REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()
_LEGACY_ENCODING = b"json/external-storage-reference"
_MARKER = "__temporal_external_storage_reference"
"""Metadata temporalio puts on a reference it has passed through the codec."""
_PROTOBUF = frozenset({b"json/protobuf", b"binary/protobuf"})
_CLAIM_KEY = "sha256"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_MAX_DEPTH = 8
"""How deep payloads inside payloads are followed (each level is a parsed message)."""


class EncodedReferenceError(ConfigurationError):
    """A reference passed through the codec: what it refers to cannot be read without keys.

    temporalio 1.35 never writes such references; a later release may. Garbage
    collection refuses to guess and removes nothing.

    Added in 0.8.0.
    """


def stored_digests(payload: Payload, driver_name: str) -> Iterator[str]:
    """The digests of ``driver_name``'s store that ``payload`` refers to, at any depth.

    Args:
        payload: A payload from a history event, a schedule or a workflow description.
        driver_name: The file driver's name (``DRIVER_NAME`` unless configured).

    Raises:
        EncodedReferenceError: A reference is sealed by the codec.

    Added in 0.8.0.
    """
    yield from _digests(payload, driver_name, 0)


def _digests(payload: Payload, driver_name: str, depth: int) -> Iterator[str]:
    reference = _reference(payload)
    if reference is not None:
        driver, claim = reference
        digest = claim.get(_CLAIM_KEY, "")
        # Another driver's claim (an S3 key) is not this store's; a claim without a
        # valid digest resolves to nothing the store could hold.
        if driver == driver_name and _DIGEST.match(digest):
            yield digest
        return
    if payload.metadata.get(_MARKER) == b"true":
        raise EncodedReferenceError(
            "a history holds a payload-store reference sealed by the encryption codec; "
            "`smyth storage gc` cannot tell what it refers to and removes nothing"
        )
    if depth < _MAX_DEPTH:
        nested = _message(payload)
        if nested is not None:
            for inner in payloads_in(nested):
                yield from _digests(inner, driver_name, depth + 1)


def _reference(payload: Payload) -> tuple[str, dict[str, str]] | None:
    """The (driver name, claim) a reference payload carries; ``None`` if it is none."""
    encoding = payload.metadata.get("encoding", b"")
    try:
        if encoding in _PROTOBUF and payload.metadata.get("messageType") == _REFERENCE_TYPE:
            reference = ExternalStorageReference()
            if encoding == b"json/protobuf":
                json_format.Parse(payload.data, reference, ignore_unknown_fields=True)
            else:
                reference.ParseFromString(payload.data)
            return reference.driver_name, dict(reference.claim_data)
        if encoding == _LEGACY_ENCODING:
            legacy = json.loads(payload.data)
            claim = legacy["driver_claim"]["claim_data"]
            return str(legacy["driver_name"]), {str(k): str(v) for k, v in claim.items()}
    except (json_format.ParseError, DecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return None


def _message(payload: Payload) -> Message | None:
    """The protobuf message a ``*/protobuf`` payload carries, if its type is known here."""
    encoding = payload.metadata.get("encoding", b"")
    if encoding not in _PROTOBUF:
        return None
    try:
        name = payload.metadata.get("messageType", b"").decode()
        message: Message = symbol_database.Default().GetSymbol(name)()
        if encoding == b"json/protobuf":
            json_format.Parse(payload.data, message, ignore_unknown_fields=True)
        else:
            message.ParseFromString(payload.data)
    except (KeyError, UnicodeDecodeError, json_format.ParseError, DecodeError, ValueError):
        return None
    return message
