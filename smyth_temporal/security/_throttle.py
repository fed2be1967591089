"""The brake on failed authentications: token buckets per client address and per key prefix.

Only failures count and only failures are refused: a valid key is checked before the
brake and always passes, so a flood of bad keys from behind the same proxy (one
address for many people) cannot lock out anyone who holds a real key.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from smyth_temporal.security._keys import KEY_PREFIX

__all__ = ["PREFIX_CHARS", "AuthLimiter", "failure_subjects"]

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
