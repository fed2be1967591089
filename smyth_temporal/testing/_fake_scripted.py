"""What the fake vendor APIs with prompt caching share: scripted turns and usage reports."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from smyth_temporal.testing._fake_http import FakeHTTPServer

__all__ = ["CacheReport", "ScriptedFake"]

TurnT = TypeVar("TurnT")


@dataclass(frozen=True)
class CacheReport:
    """What the server counted for one request (``usage`` as it reported it)."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    output_tokens: int

    @property
    def prompt_tokens(self) -> int:
        """All input tokens: uncached, read from the cache, written to it."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class ScriptedFake(FakeHTTPServer, Generic[TurnT]):
    """A fake that answers with the turns a test scripted, then with ``respond``.

    It keeps a :class:`CacheReport` of the usage it reported for each answer.
    """

    def __init__(self, respond: Callable[[dict[str, Any]], TurnT] | None = None) -> None:
        super().__init__()
        self._respond = respond
        self._queue: collections.deque[TurnT] = collections.deque()
        self._reports: list[CacheReport] = []

    def enqueue(self, *turns: TurnT) -> None:
        """Append answers for the next requests, served in order."""
        with self._lock:
            self._queue.extend(turns)

    @property
    def reports(self) -> list[CacheReport]:
        """The usage reported for each answer, in order."""
        with self._lock:
            return list(self._reports)

    def _next_turn(self, body: dict[str, Any]) -> TurnT | None:
        """The next scripted turn, else ``respond``'s answer to ``body``, else ``None``."""
        with self._lock:
            turn = self._queue.popleft() if self._queue else None
        if turn is None and self._respond is not None:
            turn = self._respond(body)
        return turn

    def _report(self, report: CacheReport) -> None:
        with self._lock:
            self._reports.append(report)
