"""A small least-recently-used map bounded by a cost (bytes, or entries)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["LruCache"]

K = TypeVar("K")
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """Keeps the most recently used entries while their total cost stays under a budget.

    Used for content-addressed store objects, which never change under their key: a
    hit is always right. Not thread-safe: use it from the event loop only.
    """

    def __init__(self, budget: int, cost: Callable[[V], int] = lambda _: 1) -> None:
        """Create an empty cache.

        Args:
            budget: The most total cost it keeps (``0`` keeps nothing).
            cost: One entry's cost (default 1: the budget counts entries).
        """
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._budget = budget
        self._cost = cost
        self._used = 0

    def get(self, key: K) -> V | None:
        """The entry, marked as just used; ``None`` if absent."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Keep an entry, dropping the least recently used ones over the budget."""
        cost = self._cost(value)
        if cost > self._budget:
            return
        if key in self._entries:
            self._entries.move_to_end(key)
            return
        self._entries[key] = value
        self._used += cost
        while self._used > self._budget:
            _, dropped = self._entries.popitem(last=False)
            self._used -= self._cost(dropped)
