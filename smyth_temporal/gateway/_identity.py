"""Who calls: the principal a key stands for, and what its role permits.

And the brake on failed authentications: a token bucket per client address, in process.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from smyth_temporal.gateway._keys import Role

__all__ = ["ACTIONS", "DEV_PRINCIPAL", "AuthLimiter", "Permission", "Principal"]

Permission = Literal["read", "operate", "approve", "admin"]
"""What a route needs: ``read`` (look), ``operate`` (start runs, send messages,
interrupt), ``approve`` (decide approvals), ``admin`` (forget memories)."""

ACTIONS: dict[Permission, str] = {
    "read": "read runs, approvals, memories or schedules",
    "operate": "start runs, send messages or interrupt",
    "approve": "decide approvals",
    "admin": "forget memories",
}
"""Each permission in words, for the 403 that refuses it."""

_GRANTS: dict[Role, frozenset[Permission]] = {
    "viewer": frozenset({"read"}),
    # Operators and approvers read too: nobody can act on what they cannot see.
    "operator": frozenset({"read", "operate"}),
    "approver": frozenset({"read", "approve"}),
    "admin": frozenset({"read", "operate", "approve", "admin"}),
}

_MAX_ADDRESSES = 10_000


@dataclass(frozen=True)
class Principal:
    """The caller, as its API key says.

    Added in 0.3.0.
    """

    name: str
    """The key's name: recorded as who decided, interrupted or sent."""
    tenant: str
    """The only tenant the caller reaches."""
    role: Role
    """What it may do."""

    def may(self, permission: Permission) -> bool:
        """Whether the role grants ``permission``."""
        return permission in _GRANTS[self.role]


DEV_PRINCIPAL = Principal(name="insecure-dev", tenant="default", role="admin")
"""Who a request without a key is under ``smyth serve --insecure-dev``."""


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
