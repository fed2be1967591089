"""The brake on failed authentications: a token bucket per client address, in process."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["AuthLimiter"]

_MAX_ADDRESSES = 10_000


class AuthLimiter:
    """Failed authentications per client address: a token bucket each.

    An address may fail ``burst`` times in a row, then once per ``1/refill`` seconds;
    while its bucket is empty, every attempt from it is refused before the key is
    even looked at. Keys are far too long to guess, so this is about keeping the log
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

    def retry_after(self, address: str) -> float | None:
        """Seconds until ``address`` may try again, or ``None`` if it may now."""
        tokens = self._tokens(address)
        if tokens >= 1:
            return None
        return (1 - tokens) / self.refill

    def failed(self, address: str) -> None:
        """Take a token from ``address``'s bucket."""
        self._buckets[address] = (self._tokens(address) - 1, self._clock())
        self._buckets.move_to_end(address)
        if len(self._buckets) > _MAX_ADDRESSES:
            self._buckets.popitem(last=False)  # bounded memory: the stalest address goes

    def _tokens(self, address: str) -> float:
        tokens, since = self._buckets.get(address, (float(self.burst), self._clock()))
        return min(float(self.burst), tokens + (self._clock() - since) * self.refill)
