"""A provider's fake whose window shrinks mid-run: the small-window tests of each provider.

``tests/models/test_model_fallback.py`` (Anthropic) and ``test_google_agent.py`` (Gemini)
play the same run in their provider's turns: six quoting turns with long notes, the
window cut to turn 5's prompt after the sixth, so turn 7 is refused until the agent
compacts; then the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from smyth_temporal.testing import CacheReport

Turn = TypeVar("Turn")
SYMBOLS = ["ACME", "GLOBEX", "INITECH"]
SUMMARY = "Quoted ACME, GLOBEX and INITECH so far."
"""What the summary call answers (the tests find it in the turn after compacting)."""


class Windowed(Protocol):
    """A fake API with a window that can be changed while it serves."""

    context_window: int | None

    @property
    def reports(self) -> list[CacheReport]: ...


class ShrinkingWindow(Generic[Turn]):
    """Answers the agent's turns (kept in ``turns``) and summary calls (in ``summaries``).

    Args:
        turn: The provider's turn writer (``anthropic_turn``, ``google_turn``).
        call: Turn ``n``'s get_quote call of ``symbol``, as ``turn`` takes it.
        is_summary: Whether a request's body is a summary call.
        notes: What the model says beside each call (turns much longer than a summary).
        answer: The answer after the sixth call.
    """

    def __init__(
        self,
        *,
        turn: Callable[..., Turn],
        call: Callable[[int, str], Any],
        is_summary: Callable[[dict[str, Any]], bool],
        notes: str,
        answer: str,
    ) -> None:
        self.turns: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.fake: Windowed | None = None
        """The fake serving this script (set once it is made: it takes the script)."""
        self._turn, self._call, self._is_summary = turn, call, is_summary
        self._notes, self._answer = notes, answer

    def __call__(self, body: dict[str, Any]) -> Turn:
        if self._is_summary(body):
            self.summaries.append(body)
            return self._turn(SUMMARY)
        self.turns.append(body)
        n = len(self.turns)
        if n == 6:
            # From now on the window is the size of turn 5's prompt: turn 7 is refused.
            assert self.fake is not None, "set the script's fake"
            self.fake.context_window = self.fake.reports[4].prompt_tokens
        if n <= 6:
            symbol = SYMBOLS[(n - 1) % 3]
            return self._turn(f"Looking up {symbol}. {self._notes}", [self._call(n, symbol)])
        return self._turn(self._answer)
