"""A retried model call's text on streams that cannot take text back (Responses, chat).

Found by a loaded full run: the model activity was cancelled mid-stream and retried,
and the Responses stream sent ``Let me look the \\nLet \\nLet me look the quote up first.``
for ``Let me look the quote up first.``: each piece of the new attempt that was still
behind what had been shown went out again after a line break.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.gateway._turns import ShownText

TEXT = "Let me look the quote up first."


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def test_a_retry_that_writes_the_same_text_sends_only_what_was_not_shown() -> None:
    shown = ShownText()
    sent = [shown.piece("m", "Let me look the ", reset=False)]
    # The retry starts the message again, behind what was shown, then passes it.
    sent += [shown.piece("m", "Let ", reset=True), shown.piece("m", "me look the ", reset=False)]
    sent += [shown.piece("m", "quote up first.", reset=False)]
    assert "".join(sent) == TEXT
    assert shown.text("m") == TEXT


def test_a_retry_that_writes_otherwise_goes_on_after_one_line_break() -> None:
    shown = ShownText()
    sent = [shown.piece("m", "Buy", reset=False), shown.piece("m", "Sell", reset=True)]
    sent.append(shown.piece("m", " now", reset=False))
    assert "".join(sent) == "Buy\nSell now"


@given(
    attempts=st.lists(st.lists(st.integers(0, 64), max_size=6), min_size=1, max_size=4),
    stops=st.lists(st.integers(0, 64), min_size=4, max_size=4),
    text=st.text(min_size=1, max_size=40),
)
def test_retries_of_the_same_text_leave_the_deltas_equal_to_it(
    attempts: list[list[int]], stops: list[int], text: str
) -> None:
    """Invariant: attempts that each write a prefix of the text, the last all of it,
    send pieces that join to exactly the text."""
    shown, sent = ShownText(), []
    for number, cuts in enumerate(attempts):
        last = number == len(attempts) - 1
        written = text if last else text[: stops[number % len(stops)] % (len(text) + 1)]
        for index, piece in enumerate(pieces_of(written, cuts) or [""]):
            sent.append(shown.piece("m", piece, reset=index == 0))
    assert "".join(sent) == text


def test_a_streamed_chat_completion_of_a_retried_call_reads_as_the_message() -> None:
    from smyth_temporal.gateway._openai import _Answer
    from smyth_temporal.gateway._turns import TurnMessage, TurnText

    answer = _Answer(interim_text=True, workflow_id="w")
    items = [
        TurnText("m", "Let me look the "),
        TurnText("m", "Let ", reset=True),
        TurnText("m", "me look the "),
        TurnText("m", "quote up first."),
        TurnMessage("m", TEXT, ()),
    ]
    sent = [piece for item in items for piece in answer.add(item)]
    assert "".join(sent) == TEXT
