"""API keys at the door of every interface (the gateway, the MCP server over HTTP).

``authenticate`` checks a presented key; the brake on failures is a token bucket per
client address and per key prefix. Only failures count and only failures are refused:
a valid key is checked before the brake and always passes, so a flood of bad keys from
behind the same proxy (one address for many people) cannot lock out anyone who holds
a real key.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from http import HTTPStatus

from smyth_temporal.security._identity import Principal
from smyth_temporal.security._keys import KEY_PREFIX, KeyStore

__all__ = ["PREFIX_CHARS", "AuthLimiter", "KeyRefused", "authenticate", "failure_subjects"]

_MAX_SUBJECTS = 10_000

PREFIX_CHARS = 8
"""How much of a presented key (after ``smyth_``) names its bucket: enough to tell keys
apart, far too little to help guess one."""


def failure_subjects(address: str, presented: str | None) -> tuple[str, ...]:
    """The buckets a failed attempt from ``address`` with key ``presented`` draws on.

    The address (a flood from one place) and the key's first characters (one key
    tried from many places); a request without a key counts for its address only.
    """
    subjects = [f"address:{address}"]
    if presented:
        body = presented.removeprefix(KEY_PREFIX)
        subjects.append(f"key:{body[:PREFIX_CHARS]}")
    return tuple(subjects)


class AuthLimiter:
    """Failed authentications per subject (an address, a key prefix): a token bucket each.

    A subject may fail ``burst`` times in a row, then once per ``1/refill`` seconds;
    while one of an attempt's buckets is empty, a failing attempt is answered 429
    instead of 401. Keys are far too long to guess, so this is about keeping the log
    and the CPU quiet under a flood, not about the keys' strength.

    Args:
        burst: The bucket's size.
        refill: Tokens earned back per second.
        clock: Seconds, monotonic (a parameter for tests).
    """

    def __init__(
        self, burst: int, refill: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.burst = burst
        self.refill = refill
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def retry_after(self, *subjects: str) -> float | None:
        """Seconds until every one of ``subjects`` may fail again, or ``None`` if all may now."""
        waits = [(1 - tokens) / self.refill for tokens in map(self._tokens, subjects)]
        late = [wait for wait in waits if wait > 0]
        return max(late) if late else None

    def failed(self, *subjects: str) -> None:
        """Take a token from each subject's bucket."""
        for subject in subjects:
            self._buckets[subject] = (self._tokens(subject) - 1, self._clock())
            self._buckets.move_to_end(subject)
            if len(self._buckets) > _MAX_SUBJECTS:
                self._buckets.popitem(last=False)  # bounded memory: the stalest goes

    def _tokens(self, subject: str) -> float:
        tokens, since = self._buckets.get(subject, (float(self.burst), self._clock()))
        return min(float(self.burst), tokens + (self._clock() - since) * self.refill)


class KeyRefused(Exception):
    """A request's key was missing, wrong or revoked (401), or its sender is throttled (429).

    Args:
        status: 401 or 429.
        reason: What to tell the caller (never the key).
        retry_after: Seconds until a throttled sender may try again (429 only).
    """

    def __init__(self, status: int, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after

    @property
    def throttled(self) -> bool:
        """Whether this is a 429."""
        return self.status == HTTPStatus.TOO_MANY_REQUESTS

    @property
    def headers(self) -> dict[str, str]:
        """``WWW-Authenticate`` for a 401, ``Retry-After`` for a 429."""
        if self.retry_after is None:
            return {"WWW-Authenticate": "Bearer"}
        return {"Retry-After": str(max(1, round(self.retry_after)))}


def authenticate(
    keys: KeyStore | None, limiter: AuthLimiter, address: str, presented: str | None
) -> Principal:
    """The principal of the key ``presented`` from ``address``, as every interface checks it.

    The key is looked at first: a valid key always passes, whatever others failed.
    A missing, wrong or revoked one counts against the address and the key's prefix.

    Raises:
        KeyRefused: 401 for a missing, wrong or revoked key; 429 once its sender or
            its prefix failed too often.
    """
    key = keys.authenticate(presented) if presented and keys is not None else None
    if key is not None:
        return Principal.of(key)
    subjects = failure_subjects(address, presented)
    wait = limiter.retry_after(*subjects)
    if wait is not None:
        raise KeyRefused(
            HTTPStatus.TOO_MANY_REQUESTS,
            f"too many failed authentications from {address} or with this key; "
            f"try again in {wait:.0f}s",
            retry_after=wait,
        )
    limiter.failed(*subjects)
    if presented:
        raise KeyRefused(HTTPStatus.UNAUTHORIZED, "invalid or revoked API key")
    raise KeyRefused(HTTPStatus.UNAUTHORIZED, "missing API key: send Authorization: Bearer <key>")
