"""The brake on failed authentications: shared by every interface, see ``security._throttle``."""

from __future__ import annotations

from smyth_temporal.security._throttle import PREFIX_CHARS, AuthLimiter, failure_subjects

__all__ = ["PREFIX_CHARS", "AuthLimiter", "failure_subjects"]
