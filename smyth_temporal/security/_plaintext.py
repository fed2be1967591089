"""Unsealed payloads where sealed ones are expected: refused, without wedging a run.

With encryption keys configured, a payload that arrives unsealed was written by
someone without the keys (``temporal workflow signal --input``, a script with a
plain client), so it must not be read: it could carry an approval decision, a
session message or an input nobody with a key sent.

Raising in the codec would fail the whole workflow activation, and a signal already
in history would fail every replay after it: the run would be wedged for good.
So the codec (``EncryptionCodec``) turns such a payload into a *refused* payload,
and the payload converter (``SealedPayloadConverter``) raises ``PayloadDecryptionError``
when anything tries to read it. temporalio then drops that signal (logged),
rejects that update or query with the error, and the run goes on.

The same holds for a payload that claims to be sealed but cannot be opened: a tag
that fails authentication, another cipher, a namespace it was not sealed for.
Whoever wrote it either had no key or moved it, so it is refused the same way (with
its reason), and a forged "sealed" signal cannot wedge the run. A payload naming a
key id this process lacks still fails the task (retried until the key is deployed):
that is how an unfinished key rotation looks, and refusing would drop real signals.

``SMYTH_ACCEPT_PLAINTEXT=on`` (or ``EncryptionCodec(accept_plaintext=True)``) reads
unsealed payloads as they are, for a deployment moving to encryption whose
histories still hold plaintext.

Added in 0.8.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from temporalio.api.common.v1 import Payload
from temporalio.converter import EncodingPayloadConverter

from smyth_temporal._payloads import PydanticConverter
from smyth_temporal.exceptions import ConfigurationError, PayloadDecryptionError

__all__ = [
    "ACCEPT_PLAINTEXT_ENV",
    "REFUSED_ENCODING",
    "REFUSED_REASON",
    "RefusedPayloadConverter",
    "SealedPayloadConverter",
    "accept_plaintext_from_env",
    "refusal",
    "refused",
]

ACCEPT_PLAINTEXT_ENV = "SMYTH_ACCEPT_PLAINTEXT"
"""``on`` reads unsealed payloads although keys are configured (migrations only)."""

REFUSED_ENCODING: Final = b"binary/smyth-refused-plaintext"
"""The ``encoding`` of a payload the codec refused: its ``data`` is the payload as sent."""

REFUSED_REASON: Final = "smyth-refused-reason"
"""Metadata of a refused payload that could not be opened: why (it stays unread)."""

REFUSED_MESSAGE = (
    "an unsealed (plaintext) payload was refused: this deployment encrypts its payloads, "
    "so input must be sent by a client with the encryption keys, or through the codec "
    f"server (`temporal ... --codec-endpoint`); {ACCEPT_PLAINTEXT_ENV}=on accepts "
    "plaintext while migrating"
)

_TRUE = ("on", "1", "true")
_FALSE = ("off", "0", "false", "")


def accept_plaintext_from_env(environ: Mapping[str, str]) -> bool:
    """Whether ``SMYTH_ACCEPT_PLAINTEXT`` says to read unsealed payloads.

    Raises:
        ConfigurationError: The setting is neither on nor off.
    """
    setting = environ.get(ACCEPT_PLAINTEXT_ENV, "off").strip().lower()
    if setting not in _TRUE + _FALSE:
        raise ConfigurationError(f"{ACCEPT_PLAINTEXT_ENV} must be on or off, not {setting!r}")
    return setting in _TRUE


def refused(payload: Payload, reason: str | None = None) -> Payload:
    """``payload`` wrapped as refused: unreadable by the converter, kept for inspection.

    Args:
        payload: The payload as it arrived.
        reason: Why a sealed-looking payload could not be opened (``None``: it was
            unsealed); the converter raises with it.
    """
    if payload.metadata.get("encoding") == REFUSED_ENCODING:
        return payload
    marked = Payload(data=payload.SerializeToString(deterministic=True))
    marked.metadata["encoding"] = REFUSED_ENCODING
    if reason is not None:
        marked.metadata[REFUSED_REASON] = reason.encode()
    return marked


def refusal(payload: Payload) -> PayloadDecryptionError | None:
    """The error reading ``payload`` raises if the codec refused it, else ``None``."""
    if payload.metadata.get("encoding") != REFUSED_ENCODING:
        return None
    reason = payload.metadata.get(REFUSED_REASON)
    return PayloadDecryptionError(
        REFUSED_MESSAGE if reason is None else reason.decode(errors="replace")
    )


class RefusedPayloadConverter(EncodingPayloadConverter):
    """Reads a refused payload by raising ``PayloadDecryptionError``; writes nothing."""

    @property
    def encoding(self) -> str:
        """See base class."""
        return REFUSED_ENCODING.decode()

    def to_payload(self, value: Any) -> Payload | None:
        """Never chosen to write a value."""
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """Refuse.

        Raises:
            PayloadDecryptionError: Always, with the reason the codec gave.
        """
        raise refusal(payload) or PayloadDecryptionError(REFUSED_MESSAGE)


class SealedPayloadConverter(PydanticConverter):
    """temporalio's pydantic payload converter, refusing refused payloads clearly.

    Without it, reading one fails with temporalio's "Unknown payload encoding".
    """

    def __init__(self) -> None:
        super().__init__()
        self._set_converters(*self.converters.values(), RefusedPayloadConverter())
