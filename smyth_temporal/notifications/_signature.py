"""Signing a webhook body, and checking a signature (for receivers)."""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SIGNATURE_HEADER", "sign", "verify_signature"]

SIGNATURE_HEADER = "X-Smyth-Signature"
"""The header that carries ``sha256=<hex HMAC-SHA256 of the raw body>``."""


def sign(body: bytes, secret: str) -> str:
    """The signature header's value for ``body``: ``sha256=<hex digest>``.

    Added in 0.9.0.
    """
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(body: bytes, header: str | None, secret: str) -> bool:
    """Whether ``header`` (``X-Smyth-Signature``) signs the raw ``body`` with ``secret``.

    For receivers: check the bytes as received, before parsing them. Compares in
    constant time.

    Added in 0.9.0.
    """
    return header is not None and hmac.compare_digest(header, sign(body, secret))
