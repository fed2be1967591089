"""``EncryptionCodec``: every payload sealed with AES-256-GCM before it leaves the process."""

from __future__ import annotations

import hmac
import zlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from hashlib import sha256
from typing import Final

import structlog
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec, SerializationContext, WithSerializationContext

from smyth_temporal._payloads import QUERY_ONLY
from smyth_temporal.exceptions import PayloadDecryptionError
from smyth_temporal.security._keys_encryption import EncryptionKey, KeyProvider, KeyRing
from smyth_temporal.security._plaintext import ACCEPT_PLAINTEXT_ENV, REFUSED_ENCODING, refused
from smyth_temporal.settings import ENCRYPTION_COMPRESS_ENV, EncryptionSettings

__all__ = ["ACCEPT_PLAINTEXT_ENV", "ENCODING", "ENCRYPTION_COMPRESS_ENV", "EncryptionCodec"]

log = structlog.get_logger("smyth_temporal.security")

ENCODING: Final = b"binary/smyth-encrypted"
"""The ``encoding`` of a sealed payload; anything else is refused on decode (see
``EncryptionCodec.decode``).

Added in 0.4.0.
"""


_CIPHER: Final = b"AES256-GCM"
_META_CIPHER = "smyth-cipher"
_META_KEY = "smyth-key-id"
_META_NAMESPACE = "smyth-namespace"
_META_COMPRESSION = "smyth-compression"
_AAD_PREFIX: Final = b"smyth-payload-v1\x00"
_NONCE_BYTES = 12
_COMPRESS_FROM = 256  # bytes: below this zlib's header costs more than it saves
_UNKNOWN_NAMESPACES = frozenset({"ReplayNamespace"})
"""Namespaces that stand for "not known": temporalio's ``Replayer`` uses this one unless
told the real namespace (``Replayer(namespace=...)``), and a history downloaded from a
namespace must still replay. The recorded namespace stays authenticated either way."""


@lru_cache(maxsize=64)
def _subkeys(secret: bytes) -> tuple[AESGCM, bytes]:
    """The AES-GCM key and the nonce key, both derived from one master key (HKDF)."""

    def derive(info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)

    return AESGCM(derive(b"smyth aes-256-gcm")), derive(b"smyth synthetic nonce")


def _aad(metadata: Mapping[str, bytes]) -> bytes:
    """The metadata the tag authenticates: every field of ours, in a fixed order."""
    parts = [_AAD_PREFIX]
    for name in sorted(metadata):
        parts += [name.encode(), b"=", metadata[name], b"\x00"]
    return b"".join(parts)


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """Seals every payload with AES-256-GCM (the ``cryptography`` package).

    A sealed payload's ``data`` is a 12-byte nonce and the ciphertext of the whole
    original payload (its metadata and data); its metadata says the cipher, the key
    id (so keys rotate: see ``KeyRing``), the namespace it was sealed for, and
    whether it was compressed. That metadata is authenticated with the ciphertext: a
    payload whose bytes or metadata change, or that is moved to another namespace,
    fails to decrypt with ``PayloadDecryptionError`` instead of being read.

    The nonce is an HMAC of the namespace and plaintext under a key derived from the
    encryption key (a synthetic nonce), so equal payloads seal to equal ciphertexts:
    the content-addressed payload store still stores each distinct payload once, and
    its file names (SHA-256 of the ciphertext) reveal nothing about the plaintext.
    What that does reveal is that two payloads of one namespace are equal, as the
    store's addresses already did.

    ``SmythPlugin`` puts it on the data converter when a key is configured
    (``SMYTH_ENCRYPTION_KEYS`` or ``SMYTH_ENCRYPTION_KEY_FILE``); Temporal applies it
    before the payload store, so the store only ever holds ciphertext.

    An unsealed payload coming in is refused: whoever wrote it had no key, so it
    must not decide anything (an approval, a message, an input). It is turned into a
    *refused* payload, which ``SealedPayloadConverter`` (on the plugin's converter)
    will not read, so the signal carrying it is dropped and the update or query is
    rejected with ``PayloadDecryptionError``, and the run goes on (see
    ``smyth_temporal.security._plaintext``). ``accept_plaintext`` reads them, for
    migrations only. ``decode`` refuses a sealed payload it cannot open (altered,
    moved, another cipher) the same way, with the reason, so a forged one cannot wedge
    the run; one that names a key this process lacks still raises (a rotation not
    finished: the task is retried until the key is deployed). ``open`` always raises.

    Added in 0.4.0. Changed in 0.8.0: unsealed payloads, and sealed ones that cannot
    be opened, are refused on decode unless ``accept_plaintext``.
    """

    def __init__(
        self,
        keys: KeyRing | KeyProvider,
        *,
        compress: bool = False,
        namespace: str | None = None,
        accept_plaintext: bool = False,
        refuse_unreadable: bool = True,
    ) -> None:
        """Create the codec.

        Args:
            keys: The key ring, or a provider (a KMS hook) asked for it once, now.
            compress: Compress payloads with zlib before sealing them, when smaller.
            namespace: The namespace payloads are sealed for and checked against; set
                by Temporal through ``with_context``; ``None`` reads any namespace.
            accept_plaintext: Read unsealed payloads as they are instead of refusing
                them: only while histories written before encryption still run.
            refuse_unreadable: ``decode`` refuses a sealed payload it cannot open
                (the converter then raises with the reason) instead of raising, which
                would fail the workflow task for good. ``False`` for display (the
                codec server), where the reason is the answer.
        """
        self._keys = keys if isinstance(keys, KeyRing) else keys.key_ring()
        self._compress = compress
        self._namespace = namespace
        self._accept_plaintext = accept_plaintext
        self._refuse_unreadable = refuse_unreadable

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EncryptionCodec | None:
        """The codec the environment configures, or ``None`` without a key.

        Raises:
            ConfigurationError: A key setting is malformed, or
                ``SMYTH_ENCRYPTION_COMPRESS`` or ``SMYTH_ACCEPT_PLAINTEXT`` is neither
                on nor off.
        """
        if environ is None:
            return cls.from_settings(EncryptionSettings.load())
        return cls.from_settings(EncryptionSettings.from_environ(environ))

    @classmethod
    def from_settings(cls, settings: EncryptionSettings) -> EncryptionCodec | None:
        """The codec ``settings`` configure, or ``None`` without a key.

        Raises:
            ConfigurationError: The keys are malformed, or the key file is unreadable.

        Added in 0.9.0.
        """
        keys = KeyRing.from_settings(settings)
        if keys is None:
            return None
        return cls(
            keys,
            compress=settings.encryption_compress,
            accept_plaintext=settings.accept_plaintext,
        )

    @property
    def accepts_plaintext(self) -> bool:
        """Whether unsealed payloads are read as they are (else refused)."""
        return self._accept_plaintext

    def accepting_plaintext(self) -> EncryptionCodec:
        """This codec for display, never to act.

        It reads unsealed payloads as they are and raises on a sealed payload it cannot
        open (the reason is the answer).
        """
        if self._accept_plaintext and not self._refuse_unreadable:
            return self
        return EncryptionCodec(
            self._keys,
            compress=self._compress,
            namespace=self._namespace,
            accept_plaintext=True,
            refuse_unreadable=False,
        )

    @property
    def keys(self) -> KeyRing:
        """The key ring."""
        return self._keys

    def with_context(self, context: SerializationContext) -> EncryptionCodec:
        """This codec bound to the namespace of the workflow or activity at hand."""
        namespace = getattr(context, "namespace", None)
        if namespace in _UNKNOWN_NAMESPACES:
            namespace = None
        if not isinstance(namespace, str) or namespace == self._namespace:
            return self
        return EncryptionCodec(
            self._keys,
            compress=self._compress,
            namespace=namespace,
            accept_plaintext=self._accept_plaintext,
            refuse_unreadable=self._refuse_unreadable,
        )

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Seal each payload (one already sealed is left as it is)."""
        return [self.seal(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Open each sealed payload; refuse each unsealed or unopenable one (see the class).

        Raises:
            PayloadDecryptionError: Only with ``refuse_unreadable=False``: a sealed
                payload fails authentication, names a key this process lacks, or was
                sealed for another namespace; always: a sealed payload names a key
                this process lacks.
        """
        return [self._open_or_refuse(payload) for payload in payloads]

    def _open_or_refuse(self, payload: Payload) -> Payload:
        try:
            return self.open(payload)
        except PayloadDecryptionError as exc:
            if not self._refuse_unreadable or self._lacks_key(payload):
                # A key this process lacks is a rotation not finished: the workflow
                # task fails and is retried, and nothing is lost once the key is here.
                raise
            # Altered, moved or another cipher: whoever wrote it had no key. Raising
            # would fail the workflow task, and a forged signal in history would fail
            # every replay after it: refuse it instead, with the reason.
            log.error("codec.unreadable_refused", namespace=self._namespace, error=str(exc))
            return refused(payload, str(exc))

    def seal(self, payload: Payload) -> Payload:
        """One payload, sealed with the current key."""
        if payload.metadata.get("encoding") == ENCODING:
            return payload
        plaintext = payload.SerializeToString(deterministic=True)
        key = self._keys.current
        metadata = {_META_CIPHER: _CIPHER, _META_KEY: key.id.encode()}
        if self._namespace is not None:
            metadata[_META_NAMESPACE] = self._namespace.encode()
        if QUERY_ONLY in payload.metadata:
            # Seen by the payload store (after the codec): a query's answer stays inline.
            # Authenticated with the rest, as every field of ours is.
            metadata[QUERY_ONLY] = payload.metadata[QUERY_ONLY]
        if self._compress and len(plaintext) >= _COMPRESS_FROM:
            packed = zlib.compress(plaintext)
            if len(packed) < len(plaintext):
                plaintext = packed
                metadata[_META_COMPRESSION] = b"zlib"
        aad = _aad(metadata)
        cipher, nonce_key = _subkeys(key.secret)
        nonce = hmac.new(nonce_key, aad + plaintext, sha256).digest()[:_NONCE_BYTES]
        sealed = Payload(data=nonce + cipher.encrypt(nonce, plaintext, aad))
        sealed.metadata["encoding"] = ENCODING
        for name, value in metadata.items():
            sealed.metadata[name] = value
        return sealed

    def open(self, payload: Payload) -> Payload:
        """One payload, opened if sealed; unsealed, refused unless ``accept_plaintext``.

        Raises:
            PayloadDecryptionError: See ``decode``.
        """
        encoding = payload.metadata.get("encoding")
        if encoding != ENCODING:
            if self._accept_plaintext or encoding == REFUSED_ENCODING:
                return payload
            log.warning(
                "codec.plaintext_refused",
                namespace=self._namespace,
                encoding=(encoding or b"").decode(errors="replace"),
                hint=f"{ACCEPT_PLAINTEXT_ENV}=on reads plaintext while migrating",
            )
            return refused(payload)
        metadata = {k: v for k, v in payload.metadata.items() if k != "encoding"}
        key = self._key_for(metadata)
        sealed_for = metadata.get(_META_NAMESPACE)
        if (
            sealed_for is not None
            and self._namespace is not None
            and sealed_for.decode() != self._namespace
        ):
            raise PayloadDecryptionError(
                f"a payload sealed for namespace {sealed_for.decode()!r} was read in "
                f"{self._namespace!r}; payloads cannot move between namespaces"
            )
        cipher, _ = _subkeys(key.secret)
        nonce, body = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            plaintext = cipher.decrypt(nonce, body, _aad(metadata))
        except InvalidTag:
            raise PayloadDecryptionError(
                f"a payload sealed with key {key.id!r} failed authentication: its ciphertext "
                "or metadata was altered"
            ) from None
        if metadata.get(_META_COMPRESSION) == b"zlib":
            plaintext = zlib.decompress(plaintext)
        opened = Payload()
        opened.ParseFromString(plaintext)
        return opened

    def _lacks_key(self, payload: Payload) -> bool:
        key_id = payload.metadata.get(_META_KEY, b"").decode(errors="replace")
        return self._keys.get(key_id) is None

    def _key_for(self, metadata: Mapping[str, bytes]) -> EncryptionKey:
        if metadata.get(_META_CIPHER) != _CIPHER:
            raise PayloadDecryptionError(
                f"a payload names cipher {metadata.get(_META_CIPHER)!r}, not AES256-GCM"
            )
        key_id = metadata.get(_META_KEY, b"").decode(errors="replace")
        key = self._keys.get(key_id)
        if key is None:
            raise PayloadDecryptionError(
                f"a payload was sealed with key {key_id!r}, which this process does not have "
                f"(it has {', '.join(self._keys.ids)}); add it to SMYTH_ENCRYPTION_KEYS"
            )
        return key
